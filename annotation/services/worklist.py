"""An annotator's own view of their studies: which studies they work in, and their items.

Rows are plain dicts built from `values()`, numbered in the order the annotator opened the
items: never the study's sampling position (extremes are sampled first, so the position would
hint at the jury's score) and never the conversation, its run or its model.
"""

from __future__ import annotations

from django.db.models import Q

from annotation.models import Assignment, AssignmentStatus, Study, StudyStatus
from annotation.services.queue import can_take, queue_progress

ITEM_FIELDS = (
    "public_id", "status", "submitted_at", "seconds_on_task", "skip_reason", "invalidated_at",
    "practice", "synthetic", "imported",
    "item__conversation__entry__condition", "item__conversation__entry__task_subcategory",
)  # fmt: skip


def annotator_studies(annotator) -> list[dict]:
    """Studies the annotator may take now or has worked in, each with their own progress."""
    studies = (
        Study.objects.filter(
            Q(status=StudyStatus.OPEN) | Q(items__assignments__annotator=annotator)
        )
        .select_related("project")
        .distinct()
        .order_by("-created_at")
    )
    rows = []
    for study in studies:
        open_to_me = can_take(study, annotator)
        if open_to_me or study.items.filter(assignments__annotator=annotator).exists():
            rows.append(
                {"study": study, "open": open_to_me, "progress": queue_progress(study, annotator)}
            )
    return rows


def my_items(study: Study, annotator) -> dict[str, list[dict]]:
    """The annotator's items in the study by state; skipped and expired ones come back last."""
    rows = (
        Assignment.objects.filter(item__study=study, annotator=annotator)
        .order_by("opened_at", "pk")
        .values(*ITEM_FIELDS)
    )
    groups: dict[str, list[dict]] = {"in_progress": [], "submitted": [], "set_aside": []}
    for number, row in enumerate(rows, start=1):
        item = {
            "number": number,
            "public_id": row["public_id"],
            "status": row["status"],
            "condition": row["item__conversation__entry__condition"],
            "request": row["item__conversation__entry__task_subcategory"],
            "submitted_at": row["submitted_at"],
            "minutes": round(row["seconds_on_task"] / 60, 1),
            "skip_reason": row["skip_reason"],
            "invalidated": row["invalidated_at"] is not None,
            "practice": row["practice"],
            "synthetic": row["synthetic"],
            "imported": row["imported"],
        }
        groups[_group_of(row["status"])].append(item)
    return groups


def _group_of(status: str) -> str:
    if status == AssignmentStatus.RESERVED:
        return "in_progress"
    if status == AssignmentStatus.SUBMITTED:
        return "submitted"
    return "set_aside"  # skipped, or a reservation that expired
