"""Autosave, conflicts between tabs, submit, reopen, history, invalidation, time on task."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, HistoryKind
from annotation.services import queue
from annotation.services.annotations import (
    Draft,
    EditConflict,
    Incomplete,
    annotation_autosave,
    annotation_invalidate,
    annotation_reopen,
    annotation_submit,
    time_touch,
)
from annotation.services.history import ANNOTATION_FIELDS
from annotation.services.studies import panel_versions, study_lock

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(study, clinicians):
    return queue.next_assignment(study=study, annotator=clinicians[0])


def full_draft(assignment, score=4) -> Draft:
    ids = [v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)]
    return Draft(scores=dict.fromkeys(ids, score), feedback={ids[0]: "booked too early"})


def test_an_autosaved_draft_is_what_a_reload_finds(assignment):
    event = assignment.item.conversation.events.first().event_id
    draft = Draft(scores={"clinical_safety": 2}, feedback={"clinical_safety": "missed a flag"},
                  event_links={"clinical_safety": [event]}, overall_comment="ok")  # fmt: skip
    annotation_autosave(assignment, draft=draft, version=0, actor=assignment.annotator)
    reloaded = Assignment.objects.get(pk=assignment.pk)
    assert reloaded.scores == {"clinical_safety": 2}
    assert reloaded.event_links == {"clinical_safety": [event]}
    assert reloaded.overall_comment == "ok" and reloaded.version == 1


def test_a_stale_tab_is_refused_and_its_change_kept_in_the_history(assignment):
    me = assignment.annotator
    annotation_autosave(assignment, draft=Draft(scores={"clinical_safety": 2}), version=0, actor=me)
    stale = Draft(scores={"clinical_safety": 5})
    with pytest.raises(EditConflict) as conflict:
        annotation_autosave(assignment, draft=stale, version=0, actor=me)
    assert conflict.value.saved.scores == {"clinical_safety": 2}
    assert Assignment.objects.get(pk=assignment.pk).scores == {"clinical_safety": 2}
    kept = assignment.history.get(kind=HistoryKind.CONFLICT)
    assert kept.new["scores"] == {"clinical_safety": 5}


def test_a_stale_tab_that_changed_another_field_is_merged_not_refused(assignment):
    me = assignment.annotator
    annotation_autosave(assignment, draft=Draft(scores={"clinical_safety": 2}), version=0, actor=me)
    other = Draft(scores={"triage_quality": 4}, overall_comment="Booked too early.")
    seen = Draft(scores={"triage_quality": None}, overall_comment="")
    merged = annotation_autosave(assignment, draft=other, version=0, seen=seen, actor=me)
    assert merged.version == 2
    assert merged.scores == {"clinical_safety": 2, "triage_quality": 4}
    assert merged.overall_comment == "Booked too early."
    assert not assignment.history.filter(kind=HistoryKind.CONFLICT).exists()


def test_a_stale_tab_that_changed_the_same_field_is_refused_even_with_what_it_saw(assignment):
    me = assignment.annotator
    annotation_autosave(assignment, draft=Draft(scores={"clinical_safety": 2}), version=0, actor=me)
    stale = Draft(scores={"clinical_safety": 5}, feedback={"triage_quality": "fine"})
    seen = Draft(scores={"clinical_safety": None}, feedback={"triage_quality": ""})
    with pytest.raises(EditConflict):
        annotation_autosave(assignment, draft=stale, version=0, seen=seen, actor=me)
    assert Assignment.objects.get(pk=assignment.pk).feedback == {}  # none of it applied
    same = Draft(scores={"clinical_safety": 2})  # both tabs chose the same: nothing clashes
    saved = annotation_autosave(
        assignment, draft=same, version=0, seen=Draft(scores={"clinical_safety": 3}), actor=me
    )
    assert saved.scores == {"clinical_safety": 2}


def saved_everywhere(assignment) -> Assignment:
    """A draft with every kind of field filled: two scores, feedback, a link, a comment."""
    event = assignment.item.conversation.events.first().event_id
    draft = Draft(
        scores={"clinical_safety": 2, "triage_quality": 4},
        feedback={"clinical_safety": "missed a flag", "triage_quality": "sent to urgent care"},
        event_links={"clinical_safety": [event]}, overall_comment="ok",
    )  # fmt: skip
    return annotation_autosave(assignment, draft=draft, version=0, actor=assignment.annotator)


def annotation_fields(assignment) -> dict:
    saved = Assignment.objects.get(pk=assignment.pk)
    return {name: getattr(saved, name) for name in ANNOTATION_FIELDS}


def test_an_autosave_of_one_field_changes_that_field_and_keeps_every_other(assignment):
    before = annotation_fields(saved_everywhere(assignment))
    me = assignment.annotator
    annotation_autosave(assignment, draft=Draft(scores={"triage_quality": 1}), version=1, actor=me)
    annotation_autosave(assignment, draft=Draft(feedback={"triage_quality": "now clearer"}),
                        version=2, actor=me)  # fmt: skip
    after = annotation_fields(assignment)
    assert after["scores"] == {"clinical_safety": 2, "triage_quality": 1}
    assert after["feedback"] == {
        "clinical_safety": "missed a flag",
        "triage_quality": "now clearer",
    }
    assert after["event_links"] == before["event_links"] and after["overall_comment"] == "ok"


def test_a_field_sent_empty_is_cleared_and_the_fields_not_sent_stay(assignment):
    before = annotation_fields(saved_everywhere(assignment))
    cleared = Draft(scores={"clinical_safety": None}, feedback={"clinical_safety": ""},
                    event_links={"clinical_safety": []}, overall_comment="")  # fmt: skip
    annotation_autosave(assignment, draft=cleared, version=1, actor=assignment.annotator)
    after = annotation_fields(assignment)
    assert after["scores"] == {"triage_quality": 4}
    assert after["feedback"] == {"triage_quality": "sent to urgent care"}
    assert after["event_links"] == {} and after["overall_comment"] == ""
    assert before["overall_comment"] == "ok"


def test_submitting_the_last_score_alone_submits_the_whole_saved_draft(assignment):
    me = assignment.annotator
    ids = [v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)]
    annotation_autosave(assignment, draft=Draft(scores=dict.fromkeys(ids[:-1], 3),
                        overall_comment="ok"), version=0, actor=me)  # fmt: skip
    submitted = annotation_submit(assignment, draft=Draft(scores={ids[-1]: 5}), version=1,
                                  actor=me)  # fmt: skip
    assert submitted.status == AssignmentStatus.SUBMITTED
    assert submitted.scores == dict.fromkeys(ids[:-1], 3) | {ids[-1]: 5}
    assert assignment.history.get(kind=HistoryKind.SUBMIT).new["overall_comment"] == "ok"


def test_a_stale_partial_save_is_refused_and_the_history_keeps_just_what_it_sent(assignment):
    before = annotation_fields(saved_everywhere(assignment))
    stale = Draft(feedback={"triage_quality": "from the old tab"})
    with pytest.raises(EditConflict):
        annotation_autosave(assignment, draft=stale, version=0, actor=assignment.annotator)
    assert annotation_fields(assignment) == before
    kept = assignment.history.get(kind=HistoryKind.CONFLICT)
    assert kept.new == {"feedback": {"triage_quality": "from the old tab"}}


@pytest.mark.parametrize(
    "draft",
    [
        Draft(scores={"clinical_safety": 6}),
        Draft(scores={"clinical_safety": 0}),
        Draft(scores={"task_completion": 3}),  # another track's rubric
        Draft(event_links={"clinical_safety": ["no-such-event"]}),
        Draft(feedback={"clinical_safety": "x" * 5001}),
    ],
)
def test_bad_values_are_refused_and_nothing_is_saved(assignment, draft):
    with pytest.raises(ValidationError):
        annotation_autosave(assignment, draft=draft, version=0, actor=assignment.annotator)
    assert Assignment.objects.get(pk=assignment.pk).version == 0


def test_submit_names_what_is_missing_and_keeps_the_draft(assignment):
    draft = Draft(scores={"clinical_safety": 3})
    with pytest.raises(Incomplete) as incomplete:
        annotation_submit(assignment, draft=draft, version=0, actor=assignment.annotator)
    assert "Triage Quality" in incomplete.value.missing
    saved = Assignment.objects.get(pk=assignment.pk)
    assert saved.scores == {"clinical_safety": 3} and saved.status == AssignmentStatus.RESERVED


def test_reopening_and_resubmitting_keeps_old_and_new_in_the_history(assignment):
    me = assignment.annotator
    first = annotation_submit(assignment, draft=full_draft(assignment, 4), version=0, actor=me)
    reopened = annotation_reopen(first, actor=me)
    assert reopened.status == AssignmentStatus.RESERVED and reopened.slot is not None
    annotation_submit(reopened, draft=full_draft(assignment, 2), version=reopened.version,
                      actor=me)  # fmt: skip
    last = assignment.history.filter(kind=HistoryKind.SUBMIT).last()
    assert last.old["scores"]["clinical_safety"] == 4
    assert last.new["scores"]["clinical_safety"] == 2
    assert last.actor == me


def test_submitted_work_is_read_only_until_reopened(assignment):
    me = assignment.annotator
    annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=me)
    with pytest.raises(PermissionDenied, match="reopen"):
        annotation_autosave(assignment, draft=Draft(), version=1, actor=me)


def test_a_locked_study_can_no_longer_be_reopened_or_edited(assignment):
    me = assignment.annotator
    annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=me)
    study_lock(assignment.item.study)
    with pytest.raises(PermissionDenied):
        annotation_reopen(assignment, actor=me)


def test_invalidation_keeps_the_row_logs_who_and_why_and_frees_the_seat(assignment, researcher):
    me = assignment.annotator
    annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=me)
    annotation_invalidate(assignment, actor=researcher, reason="scored the wrong item")
    kept = Assignment.objects.get(pk=assignment.pk)
    assert kept.is_invalidated and kept.slot is None and kept.scores
    assert kept.invalidated_by == researcher
    assert not Assignment.objects.counted().filter(pk=kept.pk).exists()
    entry = kept.history.get(kind=HistoryKind.INVALIDATE)
    assert (entry.actor, entry.note) == (researcher, "scored the wrong item")
    with pytest.raises(ValidationError):
        annotation_invalidate(assignment, actor=researcher, reason="")


def test_time_on_task_counts_wall_time_once_across_tabs_and_skips_breaks(assignment):
    start = timezone.now()
    for seconds in (0, 30, 60, 60, 90):  # two tabs both touching at 60 s count once
        time_touch(assignment, now=start + timedelta(seconds=seconds))
    time_touch(assignment, now=start + timedelta(seconds=90 + 3600))  # back from lunch
    time_touch(assignment, now=start + timedelta(seconds=90 + 3600 + 20))
    assert Assignment.objects.get(pk=assignment.pk).seconds_on_task == 110


def test_a_calibration_submission_is_final_once_the_jury_was_shown(calibration, clinicians):
    me = clinicians[0]
    mine = queue.next_assignment(study=calibration, annotator=me)
    annotation_submit(mine, draft=full_draft(mine), version=0, actor=me)
    with pytest.raises(PermissionDenied, match="calibration"):
        annotation_reopen(mine, actor=me)
