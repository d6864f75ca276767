"""Moving work (researchers): release or extend a reservation, reassign an item or all of an
annotator's open items, send submitted work back, set a study's deadline.

Every move keeps the assignment row, so a draft keeps its history wherever it goes: a
reassignment changes who holds the assignment (the history names both) instead of starting a
new one. Seats follow the queue's rules (annotation.services.queue): a reassigned item keeps its
seat, or takes a free seat of its track, and the database's seat constraint refuses a seat
taken twice. Every move is an AssignmentHistory entry and an audit event; the annotator who
receives work is notified.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import NotificationKind, Role
from annotation.models import (
    Assignment,
    AssignmentHistory,
    AssignmentStatus,
    HistoryKind,
    Study,
    StudyStatus,
)
from annotation.services.annotations import annotation_reopen
from annotation.services.history import annotation_snapshot, history_add
from annotation.services.membership import is_enrolled
from annotation.services.outbox import notify
from annotation.services.queue import assignment_reclaim, queue_key
from audit.services import audit_record

EXTEND_HOURS = (1, 4, 24, 72)
OPEN_STATUSES = (AssignmentStatus.RESERVED, AssignmentStatus.SKIPPED, AssignmentStatus.RELEASED)


def _locked(assignment: Assignment) -> Assignment:
    return (
        Assignment.objects.select_for_update()
        .select_related("item__study__project", "annotator")
        .get(pk=assignment.pk)
    )


def _refuse(text: str) -> None:
    if text:
        raise ValidationError(text)


# --- reservations --------------------------------------------------------------------------------


def release_refusal(assignment: Assignment) -> str:
    if assignment.item.study.is_locked:
        return "The study is locked; nothing in it moves."
    if assignment.status != AssignmentStatus.RESERVED:
        return "Only an item in progress holds a reservation."
    return ""


def held_work_release(*, person, actor, **_signal) -> None:
    """accounts.signals.account_deactivated: give back the seats the person holds in open
    studies (their drafts stay in the history)."""
    held = Assignment.objects.filter(
        annotator=person, status=AssignmentStatus.RESERVED, item__study__status=StudyStatus.OPEN
    )
    for assignment in held:
        reservation_release(assignment, actor=actor, note="account deactivated")


@transaction.atomic
def reservation_release(assignment: Assignment, *, actor, note: str = "") -> Assignment:
    """Give the reservation's seat back now. The draft stays with the annotator's assignment
    (the item comes back at the end of their queue if a seat is still free then). Reopened
    work goes back to what was last submitted, which keeps its seat."""
    locked = _locked(assignment)
    _refuse(release_refusal(locked))
    before = annotation_snapshot(locked)
    if locked.submitted_at is not None:
        _restore_submission(locked)
    else:
        locked.status, locked.slot = AssignmentStatus.RELEASED, None
        locked.save(update_fields=["status", "slot"])
    history_add(
        locked,
        HistoryKind.STAFF_RELEASE,
        actor=actor,
        old=before,
        new=annotation_snapshot(locked),
        note=note[:500],
    )
    audit_record(
        actor=actor,
        action="assignment.released",
        target=locked,
        before={"status": AssignmentStatus.RESERVED},
        after={"status": locked.status},
        note=note,
    )
    return locked


def _restore_submission(assignment: Assignment) -> None:
    """Put back the annotation as it was when it was reopened (its last submission)."""
    reopened = (
        AssignmentHistory.objects.filter(assignment=assignment, kind=HistoryKind.REOPEN)
        .order_by("-at", "-pk")
        .first()
    )
    for name, value in (reopened.old if reopened else {}).items():
        setattr(assignment, name, value)
    assignment.status = AssignmentStatus.SUBMITTED
    assignment.version += 1  # a tab still open on the reopened draft must not save over it
    assignment.save()


@transaction.atomic
def reservation_extend(assignment: Assignment, *, hours: int, actor) -> Assignment:
    """Hold the reservation `hours` longer than it now runs (or than now, if it ran out)."""
    if hours not in EXTEND_HOURS:
        raise ValidationError(f"Extend by {', '.join(map(str, EXTEND_HOURS))} hours.")
    locked = _locked(assignment)
    _refuse(release_refusal(locked))
    before = locked.reserved_until
    start = max(before or timezone.now(), timezone.now())
    locked.reserved_until = start + timedelta(hours=hours)
    locked.save(update_fields=["reserved_until"])
    until = f"{locked.reserved_until:%Y-%m-%d %H:%M} UTC"
    history_add(locked, HistoryKind.EXTEND, actor=actor, note=f"by {hours} h, until {until}")
    audit_record(
        actor=actor,
        action="assignment.extended",
        target=locked,
        before={"reserved_until": _iso(before)},
        after={"reserved_until": _iso(locked.reserved_until)},
    )
    return locked


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


# --- reassignment --------------------------------------------------------------------------------


def reassign_refusal(assignment: Assignment, to) -> str:
    """Why `assignment` cannot go to `to` now, or "" when it can."""
    return movable_refusal(assignment) or receiver_refusal(assignment, to)


def movable_refusal(assignment: Assignment) -> str:
    """Why this assignment cannot be handed to anyone, or "" when it can."""
    if assignment.item.study.is_locked:
        return "The study is locked; nothing in it moves."
    if assignment.is_invalidated:
        return "Invalidated work stays where it is."
    if assignment.status not in OPEN_STATUSES or assignment.submitted_at is not None:
        return "Submitted work stays with the annotator who submitted it."
    if assignment.practice:
        return "Practice work belongs to the person practising; it takes no seat to hand on."
    return ""


def receiver_refusal(assignment: Assignment, to) -> str:
    """Why `to` cannot receive this item: the same track, enrolled, licensed, new to it."""
    if to.pk == assignment.annotator_id:
        return f"The item is already {to.username}'s."
    if not to.has_role(Role.ANNOTATOR) or not to.is_active:
        return f"{to.username} is not an active annotator."
    if to.track != assignment.track:
        return (
            f"{to.username} is on the {to.get_track_display().lower()} track; this item's "
            f"seat is on the {assignment.track} track."
        )
    if not to.licensed:
        return f"{to.username} is not licensed: their work takes no seat."
    if not is_enrolled(assignment.item.study, to):
        return f"{to.username} is not enrolled in {assignment.item.study.project.name}."
    if Assignment.objects.filter(item_id=assignment.item_id, annotator=to).exists():
        return f"{to.username} already has this item."
    if assignment.item.adjudications.filter(adjudicator=to).exists():
        return f"{to.username} adjudicates this item, so they have seen its scores."
    return ""


@transaction.atomic
def assignment_reassign(assignment: Assignment, *, to, actor, now=None) -> Assignment:
    """Hand the assignment, with its draft and history, to another annotator of its track.
    It is in progress for them, with a fresh reservation and its seat (or a free one)."""
    now = now or timezone.now()
    locked = _locked(assignment)
    _refuse(reassign_refusal(locked, to))
    previous = locked.annotator
    locked.annotator = to
    locked.queue_key = queue_key(to.pk, locked.item_id, locked.item.study.seed)
    try:
        with transaction.atomic():
            locked.save(update_fields=["annotator", "queue_key"])
    except IntegrityError:  # they took the item themselves a moment ago
        raise ValidationError(f"{to.username} already has this item.") from None
    _hold_for_receiver(locked, now)
    entry = history_add(
        locked,
        HistoryKind.REASSIGN,
        actor=actor,
        old={"annotator": previous.username, "annotator_id": previous.pk},
        new={"annotator": to.username, "annotator_id": to.pk},
        note=f"{previous.username} → {to.username}",
    )
    audit_record(
        actor=actor,
        action="assignment.reassigned",
        target=locked,
        before={"annotator": previous.username},
        after={"annotator": to.username},
    )
    notify(
        kind=NotificationKind.ITEM_REASSIGNED,
        recipients=[to],
        key=f"history:{entry.pk}",
        context={"assignment": locked.pk},
    )
    return locked


def _hold_for_receiver(assignment: Assignment, now) -> None:
    if assignment.status == AssignmentStatus.RESERVED and assignment.slot is not None:
        assignment.reserved_until = now + timedelta(
            minutes=assignment.item.study.reservation_minutes
        )
        assignment.save(update_fields=["reserved_until"])
        return
    if not assignment_reclaim(assignment, now=now):  # skipped or released: needs a free seat
        raise ValidationError("Every seat of this item's track is taken now.")


@dataclass
class ReassignResult:
    moved: list[Assignment] = field(default_factory=list)
    kept: list[tuple[Assignment, str]] = field(default_factory=list)  # (assignment, why)


def open_work_reassign(*, study: Study, giver, to, actor) -> ReassignResult:
    """Hand every open item (in progress, skipped, released) of `giver` in the study to `to`;
    the items `to` cannot take stay with `giver`, each with the reason."""
    result = ReassignResult()
    open_items = (
        Assignment.objects.filter(
            item__study=study,
            annotator=giver,
            status__in=OPEN_STATUSES,
            invalidated_at__isnull=True,
            submitted_at__isnull=True,
        )
        .select_related("item__study__project")
        .order_by("opened_at", "pk")
    )
    for assignment in open_items:
        try:
            result.moved.append(assignment_reassign(assignment, to=to, actor=actor))
        except ValidationError as refusal:
            result.kept.append((assignment, " ".join(refusal.messages)))
    return result


# --- submitted work sent back, and the deadline ------------------------------------------------


def staff_reopen(assignment: Assignment, *, actor, note: str) -> Assignment:
    """Reopen an annotator's submitted item for them to look at again (the reopen rule of
    `reopen_refusal` applies) and tell them why."""
    note = note.strip()
    if not note:
        raise ValidationError({"note": "Say what the annotator should look at again."})
    with transaction.atomic():
        reopened = annotation_reopen(assignment, actor=actor, note=note)
        audit_record(
            actor=actor,
            action="assignment.reopened",
            target=reopened,
            before={"status": AssignmentStatus.SUBMITTED},
            after={"status": reopened.status},
            note=note,
        )
    return reopened


@transaction.atomic
def study_deadline_set(study: Study, *, deadline: datetime | None, actor, now=None) -> Study:
    """Set (or clear, with None) when the annotators should be done; two days before it every
    enrolled annotator with work left is reminded."""
    now = now or timezone.now()
    if study.is_locked:
        raise ValidationError({"deadline": "The study is locked."})
    if deadline is not None and deadline <= now:
        raise ValidationError({"deadline": "The deadline must be in the future."})
    before = study.deadline
    study.deadline = deadline
    study.save(update_fields=["deadline"])
    audit_record(
        actor=actor,
        action="study.deadline_set",
        target=study,
        before={"deadline": _iso(before)},
        after={"deadline": _iso(deadline)},
    )
    return study
