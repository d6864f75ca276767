"""study_frames: which annotations count, and every left-out rating counted with its reason."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Track
from alignment.services.frames import (
    INVALIDATED,
    JURY_INCOMPLETE,
    PRACTICE,
    SYNTHETIC,
    conversation_features,
    judge_explanations,
    study_frames,
)
from annotation.models import Assignment
from jury.models import RubricResult
from tests.alignment.conftest import near_jury
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate

pytestmark = pytest.mark.django_db


def test_it_counts_submitted_work_of_both_tracks(annotated_study):
    frames = study_frames(annotated_study)
    items = annotated_study.items.count()
    assert frames.clinicians_long["item"].nunique() == items
    assert set(frames.clinicians_long["track"]) == {Track.CLINICAL, Track.OPERATIONAL}
    # 2 annotators per track x (3 judged + 2 realism rubrics) per item
    assert len(frames.clinicians_long) == items * 2 * 2 * 5
    assert set(frames.excluded.values()) == {0}
    assert {r.rubric_id for r in frames.judged_rubrics} == set(frames.jury_long["rubric"])


def test_it_leaves_out_synthetic_work_unless_included_and_counts_it(annotated_study):
    Assignment.objects.filter(item__study=annotated_study, annotator__username="clinical-0").update(
        synthetic=True
    )
    left_out = study_frames(annotated_study)
    assert "clinical-0" not in {r.username for r in left_out.raters.values()}
    items = annotated_study.items.count()
    assert left_out.excluded[SYNTHETIC] == items * 5
    assert left_out.excluded_annotations[SYNTHETIC] == items
    included = study_frames(annotated_study, include_synthetic=True)
    assert included.excluded[SYNTHETIC] == 0
    assert included.clinicians_long["synthetic"].sum() == items * 5


def test_practice_and_invalidated_work_never_counts(scored_job, people):
    study = new_study(scored_job, name="Round 1", kind="calibration", size=3)
    item = study.items.first()
    (trainee,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="trainee")
    annotate(item, trainee, scores=near_jury(scored_job, item, Track.CLINICAL, 0))
    annotate(
        item, people[Track.CLINICAL][0], scores=near_jury(scored_job, item, Track.CLINICAL, 0),
        invalidated_at=timezone.now(), invalidated_reason="scored the wrong item",
    )  # fmt: skip
    frames = study_frames(study, include_synthetic=True)
    assert frames.clinicians_long.empty
    assert frames.excluded[PRACTICE] == 5 and frames.excluded[INVALIDATED] == 5
    assert frames.excluded_annotations == {INVALIDATED: 1, PRACTICE: 1, SYNTHETIC: 0}


def test_ratings_without_a_complete_jury_stay_for_clinicians_and_are_counted(annotated_study):
    item = annotated_study.items.first()
    RubricResult.objects.filter(
        conversation=item.conversation, rubric_id="clinical_safety"
    ).delete()
    frames = study_frames(annotated_study)
    assert frames.excluded[JURY_INCOMPLETE] == 2  # two clinical annotators rated it
    rated = frames.clinicians_long
    assert (
        len(rated[(rated["item"] == item.conversation_id) & (rated["rubric"] == "clinical_safety")])
        == 2
    )


def test_filters_keep_one_model_and_one_track(annotated_study):
    frames = study_frames(annotated_study)
    model = sorted(set(frames.models.values()))[0]
    one_model = study_frames(annotated_study, model=model, track=Track.OPERATIONAL)
    assert set(one_model.models.values()) == {model}
    assert set(one_model.clinicians_long["item"]) == set(one_model.models)
    assert set(one_model.clinicians_long["track"]) == {Track.OPERATIONAL}
    assert set(one_model.jury_long["item"]) <= set(one_model.models)


def test_a_deactivated_annotators_submitted_work_still_counts(annotated_study, people):
    leaver = people[Track.CLINICAL][0]
    leaver.is_active = False
    leaver.save(update_fields=["is_active"])
    frames = study_frames(annotated_study)
    assert frames.raters[leaver.pk].active is False
    assert (frames.clinicians_long["rater"] == leaver.pk).any()


def test_judges_long_holds_every_valid_judge_score_and_their_words_come_on_request(
    annotated_study,
):
    frames = study_frames(annotated_study)
    judges = frames.judges_long
    assert set(judges["judge"]) == {0, 1}
    assert set(judges["rubric_version"]) == {1}
    assert "explanation" not in judges  # read only for the conversations a page shows
    items = sorted(set(judges["item"]))[:3]
    explanations = judge_explanations(frames, items)
    shown = judges[judges["item"].isin(items)]
    keys = set(zip(shown["item"], shown["rubric"], shown["judge"], strict=True))
    assert set(explanations) == keys
    assert min(len(text) for text in explanations.values()) > 0


def test_the_reads_select_the_studys_conversations_by_a_subquery_in_a_fixed_number_of_queries(
    annotated_study,
):
    # A bound list of every conversation id made each read grow with the study (issue 34).
    with CaptureQueriesContext(connection) as captured:
        frames = study_frames(annotated_study)
        conversation_features(frames)
    assert len(captured) <= 9
    item_ids = ", ".join(str(item) for item in sorted(frames.models)[:2])
    for query in captured:
        assert item_ids not in query["sql"], query["sql"][:200]
    tables = ('FROM "jury_rubricresult"', 'FROM "jury_judgescore"')
    scored = [q["sql"] for q in captured if any(table in q["sql"] for table in tables)]
    assert scored and all("IN (SELECT" in sql for sql in scored)


def test_the_tables_have_the_same_columns_and_types_whether_or_not_anything_was_counted(
    annotated_study,
):
    counted = study_frames(annotated_study).clinicians_long
    Assignment.objects.filter(item__study=annotated_study).update(practice=True)
    empty = study_frames(annotated_study).clinicians_long
    assert empty.empty and list(empty.columns) == list(counted.columns)
    for column in ("item", "rater", "score"):
        assert empty[column].dtype == counted[column].dtype == "int64"
    assert empty["rubric"].dtype == object  # as before the table was built by columns
