"""Writing an annotation: autosave, submit, reopen, invalidate, time on task.

Every write carries the version the writer last saw. A save from a stale tab that says what
each field it changes held before (`seen`) is merged when nobody else changed those fields
since (annotation.engine.merge): two tabs scoring different rubrics both keep their work.
Otherwise it is refused (and what it tried to save is kept in the history), so two tabs never
silently overwrite each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import NotificationKind
from annotation.engine.merge import clashing_fields
from annotation.models import Assignment, AssignmentHistory, AssignmentStatus, HistoryKind
from annotation.services.history import annotation_snapshot, history_add
from annotation.services.outbox import notify
from annotation.services.queue import reservation_renew
from annotation.services.studies import panel_versions
from audit.services import audit_record

# Gaps longer than this between two signs of life (a save or a heartbeat) are breaks, not work.
ACTIVE_GAP = timedelta(seconds=120)
FEEDBACK_LIMIT = 5000


@dataclass
class Draft:
    """What one writer sends: only these fields change, everything else stays as saved.

    A rubric missing from a dict, or `overall_comment` left None, was not sent and keeps its
    saved value; a score of None, an empty feedback text, an empty list of links or an empty
    comment was sent empty and clears that field. So a post of one field never wipes the others,
    while a user who empties a text field still clears it.
    """

    scores: dict[str, int | None] = field(default_factory=dict)
    feedback: dict[str, str] = field(default_factory=dict)
    event_links: dict[str, list[str]] = field(default_factory=dict)
    overall_comment: str | None = None


class EditConflict(Exception):
    """Another tab or device saved first; `saved` is what the server holds now."""

    def __init__(self, saved: Assignment):
        super().__init__("saved from another tab first")
        self.saved = saved


class Incomplete(Exception):
    def __init__(self, missing: list[str]):
        super().__init__("; ".join(missing))
        self.missing = missing


def _editable(assignment: Assignment) -> None:
    refusal = assignment.edit_refusal()
    if refusal:
        raise PermissionDenied(refusal)


def annotation_autosave(
    assignment: Assignment,
    *,
    draft: Draft,
    version: int,
    actor,
    seen: Draft | None = None,
    now=None,
) -> Assignment:
    """Store the draft if `version` is the one saved last, or if none of the fields it sends
    changed since the values the writer `seen`; raise EditConflict otherwise (after committing
    what the stale writer sent to the history, so it is not lost)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = (
            Assignment.objects.select_for_update()
            .select_related("item__study")
            .get(pk=assignment.pk)
        )
        _editable(locked)
        if version == locked.version or _merges(locked, draft, seen):
            return _store_draft(locked, draft, now)
        history_add(
            locked,
            HistoryKind.CONFLICT,
            actor=actor,
            new=draft_sent(draft),
            note=f"sent version {version}, saved version {locked.version}",
        )
    raise EditConflict(locked)


def _merges(saved: Assignment, draft: Draft, seen: Draft | None) -> bool:
    if seen is None:
        return False
    held = Draft(saved.scores, saved.feedback, saved.event_links, saved.overall_comment)
    return not clashing_fields(draft_fields(draft), draft_fields(seen), draft_fields(held))


def draft_fields(draft: Draft) -> dict[tuple[str, str], object]:
    """The draft as one value per field sent, named (kind, rubric id); an empty value is None."""
    fields = {}
    for kind, values in (
        ("score", draft.scores),
        ("feedback", draft.feedback),
        ("links", draft.event_links),
    ):
        fields |= {(kind, rubric): value or None for rubric, value in values.items()}
    if draft.overall_comment is not None:
        fields[("overall_comment", "")] = draft.overall_comment or None
    return fields


def _store_draft(locked: Assignment, draft: Draft, now) -> Assignment:
    _check_draft(locked, draft)
    for name, value in draft_applied(locked, draft).items():
        setattr(locked, name, value)
    locked.version += 1
    locked.saved_at = now
    _count_time(locked, now)
    locked.save()
    return reservation_renew(locked, now=now)


def draft_sent(draft: Draft) -> dict:
    """The fields the writer sent (a cleared score as None), as the history keeps them."""
    sent = {
        "scores": draft.scores,
        "feedback": draft.feedback,
        "event_links": draft.event_links,
        "overall_comment": draft.overall_comment,
    }
    return {name: value for name, value in sent.items() if value not in ({}, None)}


def draft_applied(assignment: Assignment, draft: Draft) -> dict:
    """The annotation fields of `assignment` once the fields `draft` sent are written over them."""
    comment = draft.overall_comment
    return {
        "scores": _merged(assignment.scores, draft.scores),
        "feedback": _merged(assignment.feedback, draft.feedback),
        "event_links": _merged(assignment.event_links, draft.event_links),
        "overall_comment": assignment.overall_comment if comment is None else comment,
    }


def _merged(saved: dict, sent: dict) -> dict:
    merged = dict(saved)
    for rubric_id, value in sent.items():
        if value is None or value == "" or value == []:  # sent empty: the user cleared it
            merged.pop(rubric_id, None)
        else:
            merged[rubric_id] = value
    return merged


def _check_draft(assignment: Assignment, draft: Draft) -> None:
    rubric_ids = {v.rubric_id for v in panel_versions(assignment.item.study, assignment.track)}
    errors = []
    for rubric_id, score in draft.scores.items():
        if rubric_id not in rubric_ids:
            errors.append(f"{rubric_id} is not a rubric of your track in this study")
        elif score is not None and (not isinstance(score, int) or not 1 <= score <= 5):
            errors.append(f"{rubric_id}: a score is a whole number from 1 to 5")
    for rubric_id, text in draft.feedback.items():
        if rubric_id not in rubric_ids:
            errors.append(f"feedback for {rubric_id}, which is not a rubric of your track")
        elif len(text) > FEEDBACK_LIMIT:
            errors.append(f"feedback for {rubric_id} is longer than {FEEDBACK_LIMIT} characters")
    if len(draft.overall_comment or "") > FEEDBACK_LIMIT:
        errors.append(f"the overall comment is longer than {FEEDBACK_LIMIT} characters")
    linked = {e for ids in draft.event_links.values() for e in ids}
    if linked:
        known = set(
            assignment.item.conversation.events.filter(event_id__in=linked).values_list(
                "event_id", flat=True
            )
        )
        if linked - known:
            errors.append(f"unknown trace event(s): {', '.join(sorted(linked - known))}")
    if errors:
        raise ValidationError(errors)


def missing_parts(assignment: Assignment) -> list[str]:
    """The rubrics a submission still lacks a score for, by name, in the order of the panel."""
    versions = panel_versions(assignment.item.study, assignment.track)
    return [v.name for v in versions if v.rubric_id not in assignment.scores]


def annotation_submit(
    assignment: Assignment, *, draft: Draft, version: int, actor, now=None
) -> Assignment:
    """Save the draft, then submit it if complete; Incomplete names what is missing (the draft
    is kept either way)."""
    now = now or timezone.now()
    saved = annotation_autosave(assignment, draft=draft, version=version, actor=actor, now=now)
    missing = missing_parts(saved)
    if missing:
        raise Incomplete(missing)
    with transaction.atomic():
        saved.status, saved.submitted_at = AssignmentStatus.SUBMITTED, now
        saved.save(update_fields=["status", "submitted_at"])
        history_add(
            saved,
            HistoryKind.SUBMIT,
            actor=actor,
            old=_last_submitted(saved),
            new=annotation_snapshot(saved),
        )
    return saved


def _last_submitted(assignment: Assignment) -> dict:
    last = (
        AssignmentHistory.objects.filter(assignment=assignment, kind=HistoryKind.REOPEN)
        .order_by("-at", "-pk")
        .first()
    )
    return last.old if last else {}


@transaction.atomic
def annotation_reopen(assignment: Assignment, *, actor, note: str = "", now=None) -> Assignment:
    """Reopen submitted work; reopened by someone else (a researcher), the annotator is told."""
    now = now or timezone.now()
    locked = (
        Assignment.objects.select_for_update().select_related("item__study").get(pk=assignment.pk)
    )
    refusal = locked.reopen_refusal()  # the rule the pages ask before offering the button
    if refusal:
        raise PermissionDenied(refusal)
    locked.status = AssignmentStatus.RESERVED
    locked.save(update_fields=["status"])
    entry = history_add(
        locked, HistoryKind.REOPEN, actor=actor, old=annotation_snapshot(locked), note=note[:500]
    )
    if getattr(actor, "pk", None) != locked.annotator_id:
        notify(
            kind=NotificationKind.ITEM_REOPENED,
            recipients=[locked.annotator],
            key=f"history:{entry.pk}",
            context={"assignment": locked.pk, "note": note},
        )
    return reservation_renew(locked, now=now)


@transaction.atomic
def annotation_invalidate(assignment: Assignment, *, actor, reason: str) -> Assignment:
    """A researcher sets an annotation aside (nothing is deleted); its seat reopens so the
    item can still reach its overlap."""
    reason = reason.strip()
    if not reason:
        raise ValidationError({"reason": "Give the reason for invalidating this annotation."})
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.is_invalidated:
        raise ValidationError({"reason": "This annotation is already invalidated."})
    locked.invalidated_at, locked.invalidated_by = timezone.now(), actor
    locked.invalidated_reason, locked.slot = reason[:500], None
    locked.save(update_fields=["invalidated_at", "invalidated_by", "invalidated_reason", "slot"])
    history_add(locked, HistoryKind.INVALIDATE, actor=actor, note=reason[:500])
    audit_record(
        actor=actor,
        action="annotation.invalidated",
        target=locked,
        before={"valid": True},
        after={"valid": False},
        note=reason,
    )
    return locked


@transaction.atomic
def time_touch(assignment: Assignment, *, now=None) -> None:
    """A sign of life from the review page: count the time since the last one as work if the
    gap is short. Wall time between touches, so two tabs or a reload never count twice."""
    now = now or timezone.now()
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.status != AssignmentStatus.RESERVED:
        return
    _count_time(locked, now)
    locked.save(update_fields=["seconds_on_task", "last_active_at"])
    assignment.seconds_on_task, assignment.last_active_at = locked.seconds_on_task, now
    reservation_renew(locked, now=now)


def _count_time(assignment: Assignment, now) -> None:
    last = assignment.last_active_at
    if last is not None and timedelta(0) < now - last <= ACTIVE_GAP:
        assignment.seconds_on_task += int((now - last).total_seconds())
    assignment.last_active_at = now
