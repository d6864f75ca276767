"""The history of an assignment: one row per change, never edited or deleted."""

from __future__ import annotations

from annotation.models import Assignment, AssignmentHistory

ANNOTATION_FIELDS = ("scores", "feedback", "event_links", "overall_comment")


def annotation_snapshot(assignment: Assignment) -> dict:
    return {name: getattr(assignment, name) for name in ANNOTATION_FIELDS}


def history_add(
    assignment: Assignment,
    kind: str,
    *,
    actor,
    old: dict | None = None,
    new: dict | None = None,
    note: str = "",
) -> AssignmentHistory:
    return AssignmentHistory.objects.create(
        assignment=assignment, kind=kind, actor=actor, old=old or {}, new=new or {}, note=note
    )
