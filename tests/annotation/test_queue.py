"""Serving items: overlap, breadth-first, per-annotator order, skips, expired reservations,
licences and locks."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Track
from annotation.models import AssignmentStatus, HistoryKind
from annotation.services import queue
from annotation.services.studies import study_lock
from tests.annotation.conftest import annotators, new_study

pytestmark = pytest.mark.django_db


def submit(assignment):
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.save(update_fields=["status"])
    return assignment


def work_through(study, annotator) -> list[int]:
    items = []
    while (assignment := queue.next_assignment(study=study, annotator=annotator)) is not None:
        items.append(submit(assignment).item_id)
    return items


def test_each_item_reaches_its_overlap_per_track_and_no_further(study, clinicians, operators):
    served = {}
    for annotator in clinicians + operators:
        for item_id in work_through(study, annotator):
            served.setdefault((item_id, annotator.track), []).append(annotator.pk)
    item_ids = set(study.items.values_list("pk", flat=True))
    assert {key[0] for key in served} == item_ids
    assert {len(people) for people in served.values()} == {2}
    assert all(len(set(people)) == len(people) for people in served.values())


def test_load_is_balanced_within_one_item_when_annotators_take_turns(study, clinicians):
    done = {a.pk: 0 for a in clinicians}
    while True:
        progressed = False
        for annotator in clinicians:
            assignment = queue.next_assignment(study=study, annotator=annotator)
            if assignment is not None:
                submit(assignment)
                done[annotator.pk] += 1
                progressed = True
        if not progressed:
            break
    assert max(done.values()) - min(done.values()) <= 1
    assert sum(done.values()) == 2 * study.items.count()


def test_started_items_are_finished_before_new_ones_are_opened(study, clinicians):
    first = submit(queue.next_assignment(study=study, annotator=clinicians[0]))
    second = queue.next_assignment(study=study, annotator=clinicians[1])
    assert second.item_id == first.item_id  # breadth-first: pair it before opening another


def test_each_annotator_meets_new_items_in_their_own_order(study):
    people = annotators(Track.OPERATIONAL, 4, prefix="order")
    firsts = {queue.next_assignment(study=study, annotator=p).item_id for p in people}
    assert len(firsts) > 1


def test_the_open_item_is_resumed_rather_than_a_new_one_reserved(study, clinicians):
    first = queue.next_assignment(study=study, annotator=clinicians[0])
    again = queue.next_assignment(study=study, annotator=clinicians[0])
    assert again.pk == first.pk


def test_a_skipped_item_comes_back_after_the_new_ones(study, clinicians):
    annotator = clinicians[0]
    skipped = queue.next_assignment(study=study, annotator=annotator)
    queue.assignment_skip(skipped, reason="unclear trace", actor=annotator)
    assert skipped.history.filter(kind=HistoryKind.SKIP, note="unclear trace").exists()
    order = work_through(study, annotator)
    assert order[-1] == skipped.item_id
    assert order.count(skipped.item_id) == 1


def test_skipping_needs_a_reason(study, clinicians):
    from django.core.exceptions import ValidationError

    assignment = queue.next_assignment(study=study, annotator=clinicians[0])
    with pytest.raises(ValidationError):
        queue.assignment_skip(assignment, reason="  ", actor=clinicians[0])


def test_an_abandoned_reservation_is_reclaimed_by_someone_else(scored_job, clinicians):
    study = new_study(scored_job, size=1, overlap=2)
    gone = queue.next_assignment(study=study, annotator=clinicians[0])
    submit(queue.next_assignment(study=study, annotator=clinicians[1]))
    assert queue.next_assignment(study=study, annotator=clinicians[2]) is None  # both seats held
    later = timezone.now() + timedelta(minutes=study.reservation_minutes + 1)
    taken = queue.next_assignment(study=study, annotator=clinicians[2], now=later)
    assert taken is not None and taken.item_id == gone.item_id
    gone.refresh_from_db()
    assert gone.status == AssignmentStatus.RELEASED and gone.slot is None
    assert gone.history.filter(kind=HistoryKind.RELEASE).exists()


def test_a_reservation_in_use_is_renewed_and_never_reclaimed(scored_job, clinicians):
    study = new_study(scored_job, size=1, overlap=2)
    held = queue.next_assignment(study=study, annotator=clinicians[0])
    submit(queue.next_assignment(study=study, annotator=clinicians[1]))
    soon = timezone.now() + timedelta(minutes=study.reservation_minutes - 1)
    queue.reservation_renew(held, now=soon)
    almost = soon + timedelta(minutes=study.reservation_minutes - 1)
    assert queue.next_assignment(study=study, annotator=clinicians[2], now=almost) is None


def test_unlicensed_annotators_practise_in_calibration_without_taking_a_seat(calibration):
    licensed = annotators(Track.CLINICAL, 2, prefix="lic")
    student = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")[0]
    for person in licensed:
        work_through(calibration, person)
    practice = work_through(calibration, student)
    assert len(practice) == calibration.items.count()  # every item, overlap already met
    assert all(a.practice and a.slot is None for a in student.assignments.all())
    assert all(not a.practice for p in licensed for a in p.assignments.all())


def test_unlicensed_annotators_cannot_take_a_target_study(study):
    student = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")[0]
    with pytest.raises(queue.StudyClosed, match="licensed"):
        queue.next_assignment(study=study, annotator=student)


def test_a_locked_study_serves_nothing(study, clinicians):
    study_lock(study)
    with pytest.raises(queue.StudyClosed, match="locked"):
        queue.next_assignment(study=study, annotator=clinicians[0])


def test_staff_cannot_take_items(study, researcher):
    with pytest.raises(queue.StudyClosed):
        queue.next_assignment(study=study, annotator=researcher)


def test_progress_counts_done_and_what_is_still_open(study, clinicians):
    annotator = clinicians[0]
    before = queue.queue_progress(study, annotator)
    assert before["done"] == 0 and before["total"] == study.items.count()
    submit(queue.next_assignment(study=study, annotator=annotator))
    after = queue.queue_progress(study, annotator)
    assert after["done"] == 1 and after["total"] == study.items.count()
    assert after["percent"] == round(100 / study.items.count())


def test_the_demo_studies_leave_each_demo_annotator_items_to_score(scored_job):
    from accounts.models import User
    from accounts.services import demo_people_ensure
    from annotation.models import Adjudication, Assignment, HistoryKind
    from annotation.services.demo import annotation_demo_ensure
    from annotation.services.membership import is_enrolled

    demo_people_ensure()
    sizes = {"calibration_size": 2, "target_size": 4, "prefilled": 2}
    calibration, target = annotation_demo_ensure(scored_job, **sizes)
    assert annotation_demo_ensure(scored_job) == [calibration, target]  # built once
    assert target.items.count() == 4
    assert calibration.guides.filter(published_at__isnull=False).exists()
    synthetic = Assignment.objects.filter(synthetic=True)
    assert synthetic.filter(item__study=target, status=AssignmentStatus.SUBMITTED).exists()
    assert all(a.annotator.username.startswith("simulated-") for a in synthetic)
    # The one piece of work of a demo person: the reservation handed to `operations`.
    (handed,) = Assignment.objects.filter(synthetic=False)
    assert handed.annotator.username == "operations" and handed.status == "reserved"
    (entry,) = handed.history.filter(kind=HistoryKind.REASSIGN)
    assert entry.note == "simulated-operational-1 → operations"
    (adjudication,) = Adjudication.objects.all()
    assert adjudication.item.study == target and not adjudication.is_done
    assert target.deadline is not None
    for username in ("clinician", "operations"):
        person = User.objects.get(username=username)
        for study in (calibration, target):
            assert is_enrolled(study, person)
            assert queue.queue_progress(study, person)["open"] > 0
    senior = User.objects.get(username="clinician")
    from annotation.services.adjudication import adjudication_queue

    assert senior.senior and adjudication_queue(senior) == [adjudication]


def test_only_an_item_in_progress_can_be_skipped(study, clinicians):
    from django.core.exceptions import PermissionDenied

    assignment = queue.next_assignment(study=study, annotator=clinicians[0])
    submit(assignment)
    with pytest.raises(PermissionDenied, match="read-only"):
        queue.assignment_skip(assignment, reason="changed my mind", actor=clinicians[0])
