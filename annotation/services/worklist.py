"""An annotator's own view of their studies: which studies they work in, and their items.

Rows are plain dicts built from `values()`, numbered in the order the annotator opened the
items: never the study's sampling position (extremes are sampled first, so the position would
hint at the jury's score) and never the conversation, its run or its model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from django.db.models import Q

from annotation.models import Assignment, AssignmentStatus, Study, StudyStatus, reopen_refusal
from annotation.services.membership import visible_studies
from annotation.services.queue import can_take, queue_progress

NUMBERED_FIELDS = ("item__study_id", "public_id")
ITEM_FIELDS = (
    *NUMBERED_FIELDS,
    "status",
    "submitted_at",
    "seconds_on_task",
    "skip_reason",
    "invalidated_at",
    "practice",
    "synthetic",
    "imported",
    "item__conversation__entry__condition",
    "item__conversation__entry__task_subcategory",
)


def annotator_studies(annotator) -> list[dict]:
    """Studies of the annotator's projects that they may take now or have worked in, each
    with their own progress."""
    studies = (
        visible_studies(annotator)
        .filter(Q(status=StudyStatus.OPEN) | Q(items__assignments__annotator=annotator))
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


def next_open_study(annotator, *, after: Study) -> Study | None:
    """Another study where the annotator still has work (an item to take, one in progress or
    one they skipped): offered when they reach the end of `after`'s queue."""
    for row in annotator_studies(annotator):
        progress = row["progress"]
        waiting = progress["open"] or progress["in_progress"] or progress["skipped"]
        if row["study"].pk != after.pk and row["open"] and waiting:
            return row["study"]
    return None


def my_items(study: Study, annotator) -> dict[str, list[dict]]:
    """The annotator's items in the study by state; skipped and expired ones come back last.
    A submitted item says why it cannot be reopened, from the rule the reopen service uses."""
    rows = _in_opening_order(annotator, [study.pk]).values(*ITEM_FIELDS)
    groups: dict[str, list[dict]] = {"in_progress": [], "submitted": [], "set_aside": []}
    for number, row in _numbered(rows):
        invalidated = row["invalidated_at"] is not None
        item = {
            "number": number,
            "public_id": row["public_id"],
            "status": row["status"],
            "condition": row["item__conversation__entry__condition"],
            "request": row["item__conversation__entry__task_subcategory"],
            "submitted_at": row["submitted_at"],
            "minutes": round(row["seconds_on_task"] / 60, 1),
            "skip_reason": row["skip_reason"],
            "invalidated": invalidated,
            "practice": row["practice"],
            "synthetic": row["synthetic"],
            "reopen_refusal": reopen_refusal(
                study=study, status=row["status"], invalidated=invalidated
            ),
            "imported": row["imported"],
        }
        groups[_group_of(row["status"])].append(item)
    return groups


def my_item_numbers(annotator, study_ids: Iterable[int]) -> dict[int, dict]:
    """Study item id -> {"number", "public_id"} of the annotator's own items in these studies:
    the number their worklist shows, so a guide or a review page names an item as they know it."""
    rows = _in_opening_order(annotator, study_ids).values(*NUMBERED_FIELDS, "item_id")
    return {
        row["item_id"]: {"number": number, "public_id": row["public_id"]}
        for number, row in _numbered(rows)
    }


def my_item_number(assignment: Assignment) -> int:
    """The number the annotator's worklist gives this item of theirs."""
    numbers = my_item_numbers(assignment.annotator_id, [assignment.item.study_id])
    return numbers[assignment.item_id]["number"]


def _in_opening_order(annotator, study_ids: Iterable[int]):
    return Assignment.objects.filter(item__study_id__in=study_ids, annotator=annotator).order_by(
        "item__study_id", "opened_at", "pk"
    )


def _numbered(rows) -> Iterator[tuple[int, dict]]:
    """Rows (in `_in_opening_order`) numbered from 1 within each study."""
    counts: Counter = Counter()
    for row in rows:
        counts[row["item__study_id"]] += 1
        yield counts[row["item__study_id"]], row


def _group_of(status: str) -> str:
    if status == AssignmentStatus.RESERVED:
        return "in_progress"
    if status == AssignmentStatus.SUBMITTED:
        return "submitted"
    return "set_aside"  # skipped, or a reservation that expired
