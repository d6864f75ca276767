"""Creating a study: validation, the sample, held-out calibration conversations."""

import pytest
from django.core.exceptions import ValidationError

from annotation.services.studies import StudySpec, panel_versions, study_create
from jury.services.rubrics import current_versions
from tests.annotation.conftest import new_study

pytestmark = pytest.mark.django_db


def test_a_study_samples_conversations_and_records_coverage(study):
    assert study.items.count() > 0
    coverage = study.coverage
    assert {c["model"] for c in coverage["cells"]} >= {"offline/careful · baseline"}
    assert sum(c["sampled"] for c in coverage["cells"]) == study.items.count() * len(
        coverage["rubrics"]
    )


def test_calibration_conversations_are_held_out_of_target_studies(scored_job):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    target = new_study(scored_job, name="Main study", size=8)
    held = set(calibration.items.values_list("conversation_id", flat=True))
    used = set(target.items.values_list("conversation_id", flat=True))
    assert held and not held & used


def test_each_calibration_round_draws_fresh_conversations(scored_job):
    first = new_study(scored_job, name="Round 1", kind="calibration", size=2)
    second = new_study(scored_job, name="Round 2", kind="calibration", size=2, round_number=2)
    assert not set(first.items.values_list("conversation_id", flat=True)) & set(
        second.items.values_list("conversation_id", flat=True)
    )


def test_another_project_may_reuse_the_same_conversations(scored_job):
    calibration = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    other = new_study(scored_job, name="Other", size=8, project="Another project")
    assert set(calibration.items.values_list("conversation_id", flat=True)) <= set(
        other.items.values_list("conversation_id", flat=True)
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"overlap_clinical": 1}, "overlap_clinical"),
        ({"overlap_operational": 5}, "overlap_operational"),
        ({"sample_size": 0}, "sample_size"),
        ({"kind": "calibration", "round_number": None}, "round_number"),
        ({"name": "Careless agents, offline/careless"}, "name"),
        ({"project_name": " "}, "project_name"),
    ],
)
def test_a_study_that_cannot_be_fair_is_refused_with_the_field_named(scored_job, change, field):
    spec = StudySpec(**({"project_name": "P", "name": "S", "kind": "target", "sample_size": 4}
                        | change))  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        study_create(spec=spec, scoring_jobs=[scored_job], rubric_versions=current_versions())
    assert field in refused.value.message_dict


def test_a_study_without_jobs_is_refused(db):
    spec = StudySpec(project_name="P", name="S", kind="target", sample_size=4)
    with pytest.raises(ValidationError) as refused:
        study_create(spec=spec, scoring_jobs=[], rubric_versions=current_versions())
    assert "scoring_jobs" in refused.value.message_dict


def test_the_panel_holds_the_track_rubrics_then_the_realism_rubrics(study):
    clinical = [v.rubric_id for v in panel_versions(study, "clinical")]
    assert clinical == [
        "clinical_safety", "triage_quality", "clinical_helpfulness",
        "profile_realism", "conversation_realism",
    ]  # fmt: skip


def test_infeasible_cases_are_left_out_unless_asked_for(scored_job):
    from benchmark.models import BenchmarkEntry

    entries = BenchmarkEntry.objects.filter(conversations__run=scored_job.run).distinct()
    BenchmarkEntry.objects.filter(pk=entries[0].pk).update(infeasible=True)
    without = new_study(scored_job, name="Without", size=8)
    with_them = new_study(scored_job, name="With", size=8, include_infeasible=True,
                          project="Other")  # fmt: skip
    assert not without.items.filter(conversation__entry__infeasible=True).exists()
    assert with_them.items.filter(conversation__entry__infeasible=True).exists()


def test_a_target_study_with_nothing_left_to_sample_is_refused(scored_job):
    new_study(scored_job, name="Round 1", kind="calibration", size=50)
    with pytest.raises(ValidationError, match="held out"):
        new_study(scored_job, name="Main study", size=8)
