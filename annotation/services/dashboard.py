"""What the researcher's study pages show: the study list and the live dashboard.

Counting rules (the same as the queue's): an item's overlap on a track is met by submitted,
valid assignments that hold a seat (licensed annotators); practice work and invalidated work
never fill a seat. Times on task are those of submitted assignments.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from statistics import median

from django.db.models import Count, Q
from django.utils import timezone

from accounts.models import Track
from annotation.engine.coverage import (
    coverage_heatmaps,
    coverage_rows,
    shortfall_sentences,
    strata_rows,
)
from annotation.engine.pace import BEHIND, OVERDUE, annotator_target, pace
from annotation.models import Assignment, AssignmentStatus, ProjectMember, Study

SUBMITTED, RESERVED, SKIPPED = (
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.RESERVED,
    AssignmentStatus.SKIPPED,
)


def study_rows(studies) -> list[dict]:
    """Each study with its progress: seats filled of seats needed, over both tracks."""
    studies = studies.select_related("project").annotate(
        item_count=Count("items", distinct=True),
        filled=Count(
            "items__assignments",
            filter=Q(
                items__assignments__status=SUBMITTED,
                items__assignments__slot__isnull=False,
                items__assignments__invalidated_at__isnull=True,
            ),
        ),
    )
    rows = []
    for study in studies:
        needed = study.item_count * (study.overlap_clinical + study.overlap_operational)
        rows.append(
            {
                "study": study,
                "needed": needed,
                "filled": study.filled,
                "percent": round(100 * study.filled / needed) if needed else 0,
            }
        )
    return rows


@dataclass
class Tally:
    """Assignment counts and submitted times of one annotator or one track."""

    submitted: int = 0
    in_progress: int = 0
    skipped: int = 0
    invalidated: int = 0
    practice: int = 0
    synthetic: int = 0
    imported: int = 0  # scored elsewhere, imported from a file
    seconds: list[int] = field(default_factory=list)

    def add(self, row: dict) -> None:
        if row["invalidated_at"] is not None:
            self.invalidated += 1
        elif row["status"] == SUBMITTED:
            self.submitted += 1
            if not row["synthetic"]:  # scripted work took no one's time
                self.seconds.append(row["seconds_on_task"])
        elif row["status"] == RESERVED:
            self.in_progress += 1
        elif row["status"] == SKIPPED:
            self.skipped += 1
        self.practice += row["practice"]
        self.synthetic += row["synthetic"]
        self.imported += row["imported"]

    @property
    def median_seconds(self) -> float | None:
        return median(self.seconds) if self.seconds else None

    @property
    def total_seconds(self) -> int:
        return sum(self.seconds)


def study_progress(study: Study) -> dict:
    """Live numbers: per annotator, per track, the items still short of their overlap."""
    rows = list(
        Assignment.objects.filter(item__study=study).values(
            "annotator_id",
            "annotator__username",
            "annotator__licensed",
            "track",
            "status",
            "slot",
            "practice",
            "synthetic",
            "imported",
            "seconds_on_task",
            "invalidated_at",
            "item_id",
        )
    )
    people: dict[int, dict] = {}
    tracks = {track: Tally() for track in Track.values}
    everyone = Tally()
    for row in rows:
        person = people.setdefault(
            row["annotator_id"],
            {
                "username": row["annotator__username"],
                "track": row["track"],
                "licensed": row["annotator__licensed"],
                "tally": Tally(),
            },
        )
        person["tally"].add(row)
        if not row["practice"]:
            tracks[row["track"]].add(row)
        everyone.add(row)
    missing = missing_overlap(study, rows)
    item_count = study.items.count()
    return {
        "annotators": sorted(people.values(), key=lambda p: (p["track"], p["username"])),
        "tracks": [
            _track_row(study, track, tracks[track], item_count, missing) for track in Track.values
        ],
        "missing": missing,
        "median_seconds": everyone.median_seconds,
        "submitted": everyone.submitted,
        "in_progress": everyone.in_progress,
        "items": item_count,
        "complete_items": item_count - len(missing),
    }


def _track_row(study: Study, track: str, tally: Tally, items: int, missing: list[dict]) -> dict:
    needed = items * study.overlap_for(track)
    short = sum(m["short"][track] for m in missing)
    return {
        "track": track,
        "label": Track(track).label,
        "overlap": study.overlap_for(track),
        "needed": needed,
        "filled": needed - short,
        "percent": round(100 * (needed - short) / needed) if needed else 0,
        "tally": tally,
    }


def missing_overlap(study: Study, rows: list[dict]) -> list[dict]:
    """Items whose submitted, seated annotations fall short on a track, with how many seats
    are still missing per track and how many are being worked on now."""
    filled: dict[tuple[int, str], int] = defaultdict(int)
    working: dict[tuple[int, str], int] = defaultdict(int)
    for row in rows:
        if row["slot"] is None or row["invalidated_at"] is not None:
            continue
        key = (row["item_id"], row["track"])
        if row["status"] == SUBMITTED:
            filled[key] += 1
        elif row["status"] == RESERVED:
            working[key] += 1
    missing = []
    for item_id, position, public_id in study.items.values_list(
        "pk", "position", "conversation__public_id"
    ):
        short = {t: max(0, study.overlap_for(t) - filled[(item_id, t)]) for t in Track.values}
        if any(short.values()):
            missing.append(
                {
                    "item": item_id,
                    "number": position + 1,
                    "conversation": public_id,
                    "short": short,
                    "working": {t: working[(item_id, t)] for t in Track.values},
                }
            )
    return missing


def study_coverage(study: Study) -> dict:
    """The sampler's coverage as a table, one heat map per model and the named shortfalls."""
    versions = list(study.rubric_versions.all())
    names = {v.rubric_id: v.name for v in versions}
    codes = {v.rubric_id: v.code for v in versions}
    coverage = study.coverage or {}
    return {
        "rows": coverage_rows(coverage, names),
        "heatmaps": coverage_heatmaps(coverage, codes),
        "shortfalls": shortfall_sentences(coverage, names),
        "empty_strata": sum(1 for s in coverage.get("shortfalls", []) if s["available"] == 0),
        "wanted": coverage.get("wanted_per_cell", 1),
        "candidates": coverage.get("candidates", 0),
        "strata": strata_rows(coverage),
    }


def study_pace(study: Study, *, now=None) -> list[dict]:
    """Each enrolled annotator who may take the study, with their target (quota, else a fair
    share of their track's seats), what they submitted and hold, and their pace against the
    deadline (annotation.engine.pace): the people behind first."""
    now = now or timezone.now()
    members = [
        m
        for m in ProjectMember.objects.active()
        .filter(project_id=study.project_id)
        .select_related("annotator")
        if m.annotator.licensed or study.is_calibration
    ]
    mine = Assignment.objects.filter(item__study=study, invalidated_at__isnull=True)
    submitted = Counter(
        mine.filter(status=SUBMITTED).values_list("annotator_id", flat=True).iterator()
    )
    held = Counter(mine.filter(status=RESERVED).values_list("annotator_id", flat=True).iterator())
    items = study.items.count()
    licensed = Counter(m.annotator.track for m in members if m.annotator.licensed)
    rows = []
    for member in members:
        person = member.annotator
        seats = items * study.overlap_for(person.track) if person.licensed else items
        target = annotator_target(
            quota=member.quota,
            seats=seats,
            people=licensed[person.track] if person.licensed else 1,
            items=items,
        )
        start = max(study.created_at, member.enrolled_at)
        rows.append(
            {
                "annotator": person,
                "member": member,
                "in_progress": held[person.pk],
                "pace": pace(
                    target=target,
                    submitted=submitted[person.pk],
                    start=start,
                    deadline=study.deadline,
                    now=now,
                ),
            }
        )
    late = (OVERDUE, BEHIND)
    return sorted(
        rows,
        key=lambda r: (
            r["pace"].status not in late,
            -r["pace"].behind_by,
            r["annotator"].track,
            r["annotator"].username,
        ),
    )
