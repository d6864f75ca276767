"""What a load window measured, from the locust users' logs (no Django imports).

- Request figures per request type: count, errors, p50 / p95 / max milliseconds.
- Lost autosaves: for every assignment, each field the server last acknowledged (a score, a
  feedback text, linked events, the overall comment; a submission) must be what the database
  holds afterwards. A write still in flight when the window closed (sent, never answered) may
  have landed or not: a stored value equal to such a write is not a loss.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

LOGIN = "login"
PUBLIC_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class RequestStats:
    name: str
    count: int
    errors: int
    p50_ms: float
    p95_ms: float
    max_ms: float


@dataclass(frozen=True)
class Lost:
    assignment: str
    field: str
    acknowledged: object
    stored: object


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `share` of values at or below."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def request_stats(records: Iterable[dict]) -> list[RequestStats]:
    """One row per request type in first-seen order, then "all but login" (login hashes the
    password on purpose, so it is reported apart from the pages people wait on)."""
    by_name: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_name[record["name"]].append(record)
    rows = [_stats(name, rows) for name, rows in by_name.items()]
    working = [r for name, rows in by_name.items() if name != LOGIN for r in rows]
    return [*rows, _stats("all but login", working)]


def _stats(name: str, records: list[dict]) -> RequestStats:
    times = [record["ms"] for record in records]
    return RequestStats(
        name=name,
        count=len(records),
        errors=sum(record["error"] is not None for record in records),
        p50_ms=percentile(times, 0.50),
        p95_ms=percentile(times, 0.95),
        max_ms=max(times, default=math.nan),
    )


def error_reasons(records: Iterable[dict]) -> Counter:
    return Counter(f"{r['name']}: {r['error']}" for r in records if r["error"] is not None)


def lost_autosaves(save_records: Iterable[dict], stored: Mapping[str, dict]) -> list[Lost]:
    """Every acknowledged field that the database does not hold; `stored` maps an
    assignment's public id to its scores, feedback, event_links, overall_comment and status."""
    acknowledged: dict[str, dict] = {}
    in_flight: dict[str, list[dict]] = defaultdict(list)
    for record in save_records:
        assignment = PUBLIC_ID.search(record["assignment"]).group(0)
        fields = _fields(record["draft"], submitted=record["submit"])
        if record["kind"] == "ack":
            acknowledged[assignment] = fields
            in_flight[assignment] = []
        else:
            in_flight[assignment].append(fields)
    lost = []
    for assignment, fields in acknowledged.items():
        row = stored.get(assignment)
        held = _fields(row, submitted=row["status"] == "submitted") if row else {}
        for name in fields.keys() | held.keys():
            mine, theirs = fields.get(name), held.get(name)
            if name == "status" and mine is None:
                continue  # not submitted by us: a reservation or a skip is not our claim
            if mine != theirs and all(w.get(name) != theirs for w in in_flight[assignment]):
                lost.append(Lost(assignment, name, mine, theirs))
    return lost


def _fields(draft: Mapping, *, submitted: bool) -> dict[str, object]:
    """An annotation as flat fields: one per rubric score, feedback and links, the comment."""
    fields: dict[str, object] = {"overall_comment": draft.get("overall_comment", "")}
    for part in ("scores", "feedback", "event_links"):
        for rubric_id, value in (draft.get(part) or {}).items():
            fields[f"{part}.{rubric_id}"] = value
    if submitted:
        fields["status"] = "submitted"
    return fields
