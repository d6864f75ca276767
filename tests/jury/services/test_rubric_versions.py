"""Rubrics as versioned data: shipped files loaded once, edits stored as new versions."""

import pytest

from accounts.models import Role, Track
from jury.engine.rubrics import RubricError, load_rubrics
from jury.models import RubricVersion
from jury.services import rubrics
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def current(rubric_id: str) -> RubricVersion:
    return RubricVersion.objects.get(rubric_id=rubric_id, is_current=True)


def test_shipped_rubric_files_are_loaded_once_with_their_version_and_fingerprint():
    rubrics.rubrics_ensure_shipped()
    rubrics.rubrics_ensure_shipped()
    shipped = load_rubrics()
    assert RubricVersion.objects.count() == len(shipped) == 8
    for rubric in shipped.values():
        stored = current(rubric.id)
        assert (stored.version, stored.fingerprint) == (rubric.version, rubric.fingerprint)


def test_default_weights_come_from_the_rubric_files():
    assert rubrics.current_weights() == {
        "task_completion": 1.0, "clinical_safety": 2.0, "workflow_accuracy": 1.6,
        "triage_quality": 1.4, "clinical_helpfulness": 1.4, "conversational_quality": 0.9,
    }  # fmt: skip


def test_an_edit_becomes_the_next_current_version_with_its_number_written_in():
    rubrics.rubrics_ensure_shipped()
    old = current("clinical_safety")
    text = old.yaml_text.replace("name: Clinical Safety", "name: Clinical Safety (revised)")
    new = rubrics.rubric_version_create(rubric_id="clinical_safety", yaml_text=text, note="x")
    old.refresh_from_db()
    assert (new.version, new.is_current, old.is_current) == (2, True, False)
    assert "version: 2" in new.yaml_text
    assert rubrics.rubric_of(new).version == 2 and new.name == "Clinical Safety (revised)"
    assert new.fingerprint != old.fingerprint


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace("label: Fail", "label: ''", 1), "levels.1.label"),
        (lambda t: t.replace("default_score: 4", "default_score: 9"), "default_score"),
        (lambda t: t.replace("code: CS", "code: XX"), "'code' must stay 'CS'"),
        (lambda t: t + "\nsurprise: 1\n", "unknown field"),
        (lambda t: "id: [", "could not be read"),
        (lambda t: t, "nothing changed"),
    ],
)
def test_an_invalid_edit_is_refused_naming_the_field(change, message):
    rubrics.rubrics_ensure_shipped()
    text = change(current("clinical_safety").yaml_text)
    with pytest.raises(RubricError, match=message):
        rubrics.rubric_version_create(rubric_id="clinical_safety", yaml_text=text)
    assert current("clinical_safety").version == 1


def test_annotators_see_only_their_track_and_the_realism_rubrics():
    clinician = make_user("carla", Role.ANNOTATOR, Track.CLINICAL)
    operations = make_user("otto", Role.ANNOTATOR, Track.OPERATIONAL)
    researcher = make_user("rhea", Role.RESEARCHER)
    seen = {
        user.username: set(rubrics.rubrics_visible_to(user).values_list("rubric_id", flat=True))
        for user in (clinician, operations, researcher)
    }
    realism = {"profile_realism", "conversation_realism"}
    assert seen["carla"] == realism | {"clinical_safety", "triage_quality", "clinical_helpfulness"}
    assert seen["otto"] == realism | {
        "task_completion",
        "workflow_accuracy",
        "conversational_quality",
    }
    assert len(seen["rhea"]) == 8
