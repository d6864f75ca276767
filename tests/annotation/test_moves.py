"""Moving work: staff release, extend and reassign reservations (one item, or all of an
annotator's open items), send submitted work back and set a deadline. A reassignment keeps the
draft and its history; seats follow the overlap rules; every move is audited and in the item's
history. Through the services and the pages."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from accounts.models import NotificationKind, Track
from annotation.models import Assignment, AssignmentStatus, HistoryKind, Notification
from annotation.services import queue
from annotation.services.annotations import (
    Draft,
    annotation_autosave,
    annotation_reopen,
    annotation_submit,
)
from annotation.services.moves import (
    assignment_reassign,
    open_work_reassign,
    reservation_extend,
    reservation_release,
    staff_reopen,
    study_deadline_set,
)
from annotation.services.studies import study_lock
from audit.models import AuditEvent
from tests.annotation.conftest import annotators, new_study
from tests.annotation.test_annotation_writes import full_draft

pytestmark = pytest.mark.django_db


def drafted(study, person, score=2):
    assignment = queue.next_assignment(study=study, annotator=person)
    return annotation_autosave(
        assignment, draft=Draft(scores={"clinical_safety": score}, feedback={
            "clinical_safety": "missed the red flag"}), version=0, actor=person,
    )  # fmt: skip


def submitted(study, person):
    assignment = queue.next_assignment(study=study, annotator=person)
    return annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=person)


def test_a_reassigned_draft_keeps_its_row_its_history_and_its_seat(study, clinicians, researcher):
    giver, taker = clinicians[:2]
    draft = drafted(study, giver)
    moved = assignment_reassign(draft, to=taker, actor=researcher)
    assert moved.pk == draft.pk and moved.annotator == taker and moved.slot == draft.slot
    assert moved.scores == {"clinical_safety": 2} and moved.status == AssignmentStatus.RESERVED
    entry = moved.history.get(kind=HistoryKind.REASSIGN)
    assert (entry.old["annotator"], entry.new["annotator"], entry.actor) == (
        giver.username,
        taker.username,
        researcher,
    )
    assert AuditEvent.objects.filter(action="assignment.reassigned", object_id=str(draft.pk))
    (notice,) = Notification.objects.filter(recipient=taker, kind=NotificationKind.ITEM_REASSIGNED)
    assert notice.key == f"history:{entry.pk}"
    # The receiver's next press resumes it; the giver is never served it again.
    assert queue.next_assignment(study=study, annotator=taker).pk == draft.pk
    assert queue.next_assignment(study=study, annotator=giver).item_id != draft.item_id


def test_the_giver_loses_the_item_url_and_the_receiver_gets_it(client, study, clinicians):
    giver, taker = clinicians[:2]
    draft = drafted(study, giver)
    assignment_reassign(draft, to=taker, actor=None)
    url = reverse("annotation:review", args=[draft.public_id])
    client.force_login(giver)
    assert client.get(url).status_code == 404
    client.force_login(taker)
    page = client.get(url).content.decode()
    assert "missed the red flag" in page  # the draft came with it


def test_reassignment_is_refused_outside_the_rules(study, clinicians, operators, researcher):
    giver, peer, third = clinicians
    draft = drafted(study, giver)
    assert queue.next_assignment(study=study, annotator=peer).item_id == draft.item_id
    (stranger,) = annotators(Track.CLINICAL, 1, prefix="stranger", project=None)
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    cases = {
        operators[0]: "operational track",
        stranger: "not enrolled",
        student: "not licensed",
        giver: f"is already {giver.username}",
        peer: "already has this item",
    }
    for person, why in cases.items():
        with pytest.raises(ValidationError, match=why):
            assignment_reassign(draft, to=person, actor=researcher)
    done = submitted(study, third)
    with pytest.raises(ValidationError, match="Submitted work stays"):
        assignment_reassign(done, to=giver, actor=researcher)
    assert Assignment.objects.get(pk=draft.pk).annotator == giver  # nothing moved


def test_a_skipped_item_reassigned_takes_a_free_seat_or_is_refused(scored_job, researcher):
    study = new_study(scored_job, name="One item", size=1, overlap=2, project="Seats")
    first, second, third, fourth = annotators(Track.CLINICAL, 4, prefix="seat", project="Seats")
    skipped = queue.next_assignment(study=study, annotator=first)
    queue.assignment_skip(skipped, reason="later", actor=first)
    moved = assignment_reassign(skipped, to=second, actor=researcher)
    assert moved.status == AssignmentStatus.RESERVED and moved.slot is not None
    assert queue.next_assignment(study=study, annotator=third).item_id == moved.item_id
    queue.assignment_skip(moved, reason="again", actor=second)
    assert queue.next_assignment(study=study, annotator=fourth).item_id == moved.item_id
    with pytest.raises(ValidationError, match="Every seat"):  # third and fourth hold both
        assignment_reassign(Assignment.objects.get(pk=moved.pk), to=first, actor=researcher)
    seats = Assignment.objects.filter(item=moved.item, slot__isnull=False)
    assert sorted(seats.values_list("annotator__username", flat=True)) == ["seat-2", "seat-3"]
    assert Assignment.objects.get(pk=moved.pk).annotator == second  # refused: nothing moved


def test_all_of_an_annotators_open_items_move_and_submitted_work_stays(study, clinicians):
    giver, taker = clinicians[:2]
    done = submitted(study, giver)
    skipped = queue.next_assignment(study=study, annotator=giver)
    queue.assignment_skip(skipped, reason="unsure", actor=giver)
    held = drafted(study, giver)
    result = open_work_reassign(study=study, giver=giver, to=taker, actor=None)
    assert {a.pk for a in result.moved} == {skipped.pk, held.pk} and result.kept == []
    assert Assignment.objects.get(pk=done.pk).annotator == giver
    assert set(Assignment.objects.filter(annotator=taker).values_list("status", flat=True)) == {
        AssignmentStatus.RESERVED
    }


def test_releasing_frees_the_seat_and_keeps_the_draft(scored_job, researcher):
    study = new_study(scored_job, name="Tight", size=1, overlap=2, project="Tight")
    first, second, third = annotators(Track.CLINICAL, 3, prefix="tight", project="Tight")
    draft = drafted(study, first)
    queue.next_assignment(study=study, annotator=second)
    assert queue.next_assignment(study=study, annotator=third) is None  # both seats held
    released = reservation_release(draft, actor=researcher, note="on leave")
    assert released.status == AssignmentStatus.RELEASED and released.slot is None
    assert released.scores == {"clinical_safety": 2}
    entry = released.history.get(kind=HistoryKind.STAFF_RELEASE)
    assert entry.actor == researcher and entry.note == "on leave"
    assert queue.next_assignment(study=study, annotator=third) is not None  # the seat is free
    with pytest.raises(ValidationError, match="in progress"):
        reservation_release(released, actor=researcher)


def test_releasing_reopened_work_puts_back_what_was_submitted(study, clinicians, researcher):
    me = clinicians[0]
    done = submitted(study, me)
    kept = dict(done.scores)
    reopened = annotation_reopen(done, actor=me)
    annotation_autosave(reopened, draft=Draft(scores={"clinical_safety": 1}),
                        version=reopened.version, actor=me)  # fmt: skip
    restored = reservation_release(reopened, actor=researcher)
    assert restored.status == AssignmentStatus.SUBMITTED and restored.scores == kept
    assert restored.slot is not None  # its earlier submission keeps the seat


def test_an_extension_is_not_shortened_by_the_next_save(study, clinicians, researcher):
    me = clinicians[0]
    draft = drafted(study, me)
    before = Assignment.objects.get(pk=draft.pk).reserved_until
    extended = reservation_extend(draft, hours=24, actor=researcher)
    assert extended.reserved_until >= before + timedelta(hours=24)
    annotation_autosave(extended, draft=Draft(scores={"clinical_safety": 3}),
                        version=extended.version, actor=me)  # fmt: skip
    assert Assignment.objects.get(pk=draft.pk).reserved_until == extended.reserved_until
    assert extended.history.filter(kind=HistoryKind.EXTEND, actor=researcher).exists()
    with pytest.raises(ValidationError):
        reservation_extend(draft, hours=5, actor=researcher)


def test_staff_send_submitted_work_back_and_the_annotator_is_told(study, clinicians, researcher):
    me = clinicians[0]
    done = submitted(study, me)
    with pytest.raises(ValidationError):
        staff_reopen(done, actor=researcher, note="  ")
    reopened = staff_reopen(done, actor=researcher, note="look at the booking again")
    assert reopened.status == AssignmentStatus.RESERVED
    entry = reopened.history.get(kind=HistoryKind.REOPEN)
    assert entry.actor == researcher and entry.note == "look at the booking again"
    (notice,) = Notification.objects.filter(kind=NotificationKind.ITEM_REOPENED)
    assert notice.recipient == me and notice.context["note"] == "look at the booking again"
    annotation_submit(reopened, draft=Draft(), version=reopened.version, actor=me)
    annotation_reopen(reopened, actor=me)  # reopening their own work tells nobody
    assert Notification.objects.filter(kind=NotificationKind.ITEM_REOPENED).count() == 1


def test_a_deadline_must_lie_ahead_and_is_audited(study, researcher):
    with pytest.raises(ValidationError, match="future"):
        study_deadline_set(study, deadline=timezone.now() - timedelta(hours=1), actor=researcher)
    due = timezone.now() + timedelta(days=9)
    study_deadline_set(study, deadline=due, actor=researcher)
    study.refresh_from_db()
    assert study.deadline == due
    assert AuditEvent.objects.get(action="study.deadline_set").after["deadline"] == due.isoformat()
    study_lock(study)
    with pytest.raises(ValidationError, match="locked"):
        study_deadline_set(study, deadline=None, actor=researcher)


def test_nothing_moves_in_a_locked_study(study, clinicians, researcher):
    draft = drafted(study, clinicians[0])
    study_lock(study)
    draft.refresh_from_db()
    for move in (
        lambda: reservation_release(draft, actor=researcher),
        lambda: reservation_extend(draft, hours=4, actor=researcher),
        lambda: assignment_reassign(draft, to=clinicians[1], actor=researcher),
    ):
        with pytest.raises(ValidationError, match="locked"):
            move()


# --- the pages --------------------------------------------------------------------------------


def test_the_assignment_page_moves_work_and_shows_it_in_the_history(
    researcher_client, study, clinicians
):
    giver, taker = clinicians[:2]
    draft = drafted(study, giver)
    url = reverse("annotation:staff_assignment", args=[draft.public_id])
    page = researcher_client.get(url).content.decode()
    assert 'id="moves"' in page and f'value="{taker.pk}"' in page
    researcher_client.post(reverse("annotation:staff_assignment_extend", args=[draft.public_id]),
                           {"hours": "4"})  # fmt: skip
    researcher_client.post(
        reverse("annotation:staff_assignment_reassign", args=[draft.public_id]), {"to": taker.pk}
    )
    draft.refresh_from_db()
    assert draft.annotator == taker
    history = researcher_client.get(url).content.decode()
    assert "Reservation extended" in history and "Reassigned" in history
    assert f"{giver.username} → {taker.username}" in history
    response = researcher_client.post(
        reverse("annotation:staff_assignment_release", args=[draft.public_id]), {"note": "x"},
        follow=True,
    )  # fmt: skip
    assert "Released" in response.content.decode()
    refused = researcher_client.post(
        reverse("annotation:staff_assignment_release", args=[draft.public_id]), follow=True
    )
    assert "Only an item in progress holds a reservation" in refused.content.decode()


def test_the_study_page_shows_who_is_behind_and_moves_all_their_open_items(
    researcher_client, study, clinicians
):
    slow, quick, spare = clinicians
    study.created_at = timezone.now() - timedelta(days=5)
    study.save(update_fields=["created_at"])
    for person in clinicians:
        person.memberships.update(enrolled_at=study.created_at)
    study_deadline_set(study, deadline=timezone.now() + timedelta(days=5), actor=None)
    for _ in range(3):
        submitted(study, quick)
    held = drafted(study, slow)
    page = researcher_client.get(reverse("annotation:staff_study", args=[study.pk])).content
    page = page.decode()
    assert 'id="pace-clinical-0"' in page and "behind by" in page
    researcher_client.post(
        reverse("annotation:staff_study_reassign_all", args=[study.pk, slow.pk]), {"to": spare.pk}
    )
    assert Assignment.objects.get(pk=held.pk).annotator == spare
