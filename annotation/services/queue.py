"""Serving items to annotators: reserve, resume, skip, release.

Each item needs `overlap` annotations per track. A licensed annotator's assignment takes a seat
(slot 0..overlap-1); the partial unique constraint on (item, track, slot) makes the database
refuse a second taker of the same seat, so eight annotators pressing "next" together can never
push an item past its overlap, whatever the isolation level. Unlicensed annotators may practise
in calibration rounds; their assignments take no seat and are kept apart (`practice`).

Order: the annotator's own open item first (resume), then new items breadth-first (items
whose overlap is already started before untouched ones, so paired data exists early) in an
order shuffled per annotator, then the items they skipped or lost, oldest first.

Only annotators enrolled in the study's project take its items (annotation.services.enrolment);
once they hold or submitted their quota of items of the study, no new item is reserved for them
(what they hold or skipped still comes back). An item a senior clinician adjudicates is never
served to them: they have seen its clinicians' scores; nor is an item a researcher reassigned
away from them.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Func, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Role
from annotation.models import (
    Adjudication,
    Assignment,
    AssignmentHistory,
    AssignmentStatus,
    HistoryKind,
    Study,
    StudyItem,
)
from annotation.services.history import history_add
from annotation.services.membership import is_enrolled, quota_of

CANDIDATES_PER_TRY = 25


class StudyClosed(PermissionDenied):
    pass


def can_take(study: Study, annotator) -> bool:
    if not annotator.has_role(Role.ANNOTATOR) or study.is_locked:
        return False
    return (annotator.licensed or study.is_calibration) and is_enrolled(study, annotator)


def counts_toward_overlap(study: Study, annotator) -> bool:
    return bool(annotator.licensed)


def next_assignment(*, study: Study, annotator, now=None) -> Assignment | None:
    """The assignment the annotator should work on now, reserving a new item if needed;
    None when nothing is left for them."""
    take_check(study, annotator)
    now = now or timezone.now()
    current = (
        Assignment.objects.open_for(annotator).filter(item__study=study).order_by("opened_at")
    ).first()
    if current is not None:
        return reservation_renew(current, now=now)
    room = quota_room(study, annotator)
    fresh = _reserve_new(study, annotator, now) if room is None or room > 0 else None
    return fresh or _take_back_skipped(study, annotator, now)


def quota_room(study: Study, annotator) -> int | None:
    """How many more new items the annotator may take in the study (None: no quota). Their
    submitted, held and skipped items count; invalidated and released ones do not."""
    quota = quota_of(study, annotator)
    return None if quota is None else _room(study, annotator, quota)


def _room(study: Study, annotator, quota: int) -> int:
    taken = Assignment.objects.filter(
        item__study=study,
        annotator=annotator,
        invalidated_at__isnull=True,
        status__in=[
            AssignmentStatus.SUBMITTED,
            AssignmentStatus.RESERVED,
            AssignmentStatus.SKIPPED,
        ],
    ).count()
    return max(0, quota - taken)


def take_check(study: Study, annotator) -> None:
    """Raise StudyClosed, with a reason the annotator can read, unless they may take the study."""
    if not can_take(study, annotator):
        raise StudyClosed(_refusal(study, annotator))


def _refusal(study: Study, annotator) -> str:
    if study.is_locked:
        return "This study is locked; no more annotations are taken."
    if not annotator.has_role(Role.ANNOTATOR):
        return "Only annotators take items from a study queue."
    if not is_enrolled(study, annotator):
        return "You are not enrolled in this study's project; ask its researcher to enrol you."
    return "Only licensed clinicians annotate a target study; calibration rounds are open to you."


def _reserve_new(study: Study, annotator, now) -> Assignment | None:
    practice = not counts_toward_overlap(study, annotator)
    for item in _candidate_items(study, annotator, now, practice):
        assignment = _try_reserve(item, annotator, now, practice)
        if assignment is not None:
            return assignment
    return None


def _candidate_items(study: Study, annotator, now, practice: bool) -> list[StudyItem]:
    """Items open to the annotator, breadth-first, in their own shuffled order."""
    items = _open_items(study, annotator, now, practice)
    ranked = sorted(items, key=lambda i: (-i.seats, queue_key(annotator.pk, i.pk, study.seed)))
    return ranked[:CANDIDATES_PER_TRY]


def _open_items(study: Study, annotator, now, practice: bool):
    """Items the annotator never had; for a seat-taking annotator only those with a free seat
    on their track (an expired reservation's seat counts as free).

    Each item's seats are counted by a correlated subquery answered from the (item, track,
    slot, status, reserved_until) index alone (COUNT(*): no other column read), and the
    annotator's own items are excluded by small uncorrelated lists: joining every assignment
    of the study and grouping made this count, shown on every review page, cost twenty times
    more in a study of 3,000 items than in one of 300."""
    seated = (
        Assignment.objects.filter(item=OuterRef("pk"), track=annotator.track, slot__isnull=False)
        .exclude(status=AssignmentStatus.RESERVED, reserved_until__lt=now)
        .order_by()
        .annotate(n=Func(template="COUNT(*)", output_field=IntegerField()))  # no GROUP BY
        .values("n")
    )
    items = (
        StudyItem.objects.filter(study=study)
        .order_by()
        .exclude(pk__in=_held(annotator))
        .exclude(pk__in=_adjudicated(annotator))
        .exclude(pk__in=_handed_away(annotator))
        .annotate(seats=Coalesce(Subquery(seated), 0))
    )
    if not practice:
        items = items.filter(seats__lt=study.overlap_for(annotator.track))
    return items


def _held(annotator):
    """Items the annotator holds or held: never served to them again. Read through the
    annotator's index (their assignments in any study: other studies' items match no item
    here), not by walking the study's items."""
    return Assignment.objects.filter(annotator=annotator).order_by().values("item_id")


def _adjudicated(annotator):
    """Items the annotator adjudicates: they have seen its clinicians' scores."""
    return Adjudication.objects.filter(adjudicator=annotator).order_by().values("item_id")


def _handed_away(annotator):
    """Items a researcher reassigned from this annotator to someone else: not theirs again.
    Only reassignments are read (their own partial index), in any study, like _held."""
    return (
        AssignmentHistory.objects.filter(kind=HistoryKind.REASSIGN, old__annotator_id=annotator.pk)
        .order_by()
        .values("assignment__item_id")
    )


def queue_key(annotator_id: int, item_id: int, seed: int) -> str:
    return hashlib.sha256(f"{seed}:{annotator_id}:{item_id}".encode()).hexdigest()[:16]


def _try_reserve(item: StudyItem, annotator, now, practice: bool) -> Assignment | None:
    assignment = Assignment(
        item=item,
        annotator=annotator,
        track=annotator.track,
        practice=practice,
        queue_key=queue_key(annotator.pk, item.pk, item.study.seed),
        reserved_until=_reservation_end(item.study, now),
        last_active_at=None,
    )
    if practice:
        return _insert(assignment)
    for slot in _free_slots(item, annotator.track, now):
        assignment.slot = slot
        saved = _insert(assignment)
        if saved is not None:
            return saved
        assignment.pk = None
        if Assignment.objects.filter(item=item, annotator=annotator).exists():
            return None  # the same annotator in another tab won the race
    return None


def _insert(assignment: Assignment) -> Assignment | None:
    try:
        with transaction.atomic():
            assignment.save(force_insert=True)
    except IntegrityError:
        return None
    return assignment


def _free_slots(item: StudyItem, track: str, now) -> list[int]:
    _release_expired(item, track, now)
    taken = set(
        Assignment.objects.filter(item=item, track=track, slot__isnull=False).values_list(
            "slot", flat=True
        )
    )
    return [s for s in range(item.study.overlap_for(track)) if s not in taken]


def _release_expired(item: StudyItem, track: str, now) -> None:
    """Give back the seats of reservations nobody touched in time. A reopened submission keeps
    its seat: its earlier submission still stands."""
    expired = Assignment.objects.filter(
        item=item,
        track=track,
        status=AssignmentStatus.RESERVED,
        reserved_until__lt=now,
        submitted_at__isnull=True,
        slot__isnull=False,
    )
    for assignment in expired:
        released = Assignment.objects.filter(
            pk=assignment.pk, status=AssignmentStatus.RESERVED, reserved_until__lt=now
        ).update(status=AssignmentStatus.RELEASED, slot=None)
        if released:
            history_add(assignment, HistoryKind.RELEASE, actor=None, note="reservation expired")


def _take_back_skipped(study: Study, annotator, now) -> Assignment | None:
    """Skipped and released items come back last, oldest first, if a seat is still free."""
    returning = Assignment.objects.filter(
        item__study=study,
        annotator=annotator,
        status__in=[AssignmentStatus.SKIPPED, AssignmentStatus.RELEASED],
        invalidated_at__isnull=True,
    ).order_by("saved_at", "opened_at")
    for assignment in returning:
        if assignment_reclaim(assignment, now=now):
            return assignment
    return None


def assignment_reclaim(assignment: Assignment, *, now=None) -> bool:
    """Put a skipped or released assignment back in progress, with a seat if it needs one."""
    now = now or timezone.now()
    assignment.status = AssignmentStatus.RESERVED
    assignment.reserved_until = _reservation_end(assignment.item.study, now)
    if assignment.practice:
        assignment.save(update_fields=["status", "reserved_until"])
        return True
    for slot in _free_slots(assignment.item, assignment.track, now):
        assignment.slot = slot
        try:
            with transaction.atomic():
                assignment.save(update_fields=["status", "reserved_until", "slot"])
        except IntegrityError:
            continue
        return True
    assignment.refresh_from_db()
    return False


def reservation_renew(assignment: Assignment, *, now=None) -> Assignment:
    """Opening or saving an item keeps it reserved for another reservation period; a longer
    reservation (extended by staff) is never shortened by it."""
    now = now or timezone.now()
    if assignment.status == AssignmentStatus.RESERVED:
        renewed = _reservation_end(assignment.item.study, now)
        if assignment.reserved_until is None or assignment.reserved_until < renewed:
            assignment.reserved_until = renewed
            Assignment.objects.filter(pk=assignment.pk).update(reserved_until=renewed)
    return assignment


def _reservation_end(study: Study, now):
    return now + timedelta(minutes=study.reservation_minutes)


def assignment_skip(assignment: Assignment, *, reason: str, actor) -> Assignment:
    refusal = assignment.edit_refusal()
    if refusal:
        raise PermissionDenied(refusal)
    reason = reason.strip()
    if not reason:
        raise ValidationError({"reason": "Say why you skip this item (it comes back at the end)."})
    assignment.status, assignment.slot = AssignmentStatus.SKIPPED, None
    assignment.skip_reason = reason[:300]
    assignment.saved_at = timezone.now()
    assignment.save(update_fields=["status", "slot", "skip_reason", "saved_at"])
    history_add(assignment, HistoryKind.SKIP, actor=actor, note=reason[:500])
    return assignment


def queue_progress(study: Study, annotator) -> dict:
    """Done / total for one annotator: what they submitted, what they hold, what is still open
    to them (items they never had whose overlap on their track is not met)."""
    mine = Assignment.objects.filter(item__study=study, annotator=annotator)
    counts = dict(mine.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    practice = not counts_toward_overlap(study, annotator)
    open_items = _open_items(study, annotator, timezone.now(), practice).count()
    quota = quota_of(study, annotator)
    if quota is not None:
        open_items = min(open_items, _room(study, annotator, quota))  # what the quota leaves
    done = counts.get(AssignmentStatus.SUBMITTED, 0)
    pending = sum(counts.get(s, 0) for s in (AssignmentStatus.RESERVED, AssignmentStatus.SKIPPED))
    total = done + pending + open_items
    return {
        "done": done,
        "total": total,
        "skipped": counts.get(AssignmentStatus.SKIPPED, 0),
        "in_progress": counts.get(AssignmentStatus.RESERVED, 0),
        "open": open_items,
        "percent": round(100 * done / total) if total else 100,
        "practice": practice,
        "quota": quota,
    }
