"""Choosing the slot to book when the agent did not name one.

The search widens step by step, as a front desk would: the requested clinician and type on
any date, then other clinicians of the same specialty, then the clinician with another type,
then anyone of that specialty with any type. Within a step the slot nearest the preferred day
and time wins. Every way the booked slot differs from the request is reported.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from benchmark.engine.sandbox.arguments import ToolError

if TYPE_CHECKING:
    from benchmark.engine.sandbox.state import SandboxState


def closest_slot(
    sandbox: SandboxState,
    doctor: dict[str, Any],
    appointment_type: str,
    preferred_day: date,
    time_range: tuple[str, str] | None,
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The slot to book and the list of changes from the request (empty when exact)."""
    day_offsets = _day_offsets(sandbox, preferred_day)
    same_specialty = {p["id"] for p in sandbox.providers if p["specialty"] == doctor["specialty"]}
    candidates = [
        slot
        for slot in sandbox.slots
        if slot["status"] == "open" and slot["doctor_id"] in same_specialty
    ]
    steps = (
        lambda s: s["doctor_id"] == doctor["id"] and s["type"] == appointment_type,
        lambda s: s["type"] == appointment_type,
        lambda s: s["doctor_id"] == doctor["id"],
        lambda s: True,
    )
    for step in steps:
        matching = [slot for slot in candidates if step(slot)]
        if matching:
            best = min(matching, key=lambda s: _distance(s, day_offsets, time_range))
            request = (doctor, appointment_type, preferred_day.isoformat(), time_range)
            return best, _changes(sandbox, best, *request)
    raise ToolError(
        f"No open slot with {doctor['name']} or any other {doctor['specialty']} clinician in "
        "the booking window. Offer another specialty, a message to the PCP, or the virtual "
        "call queue."
    )


def _day_offsets(sandbox: SandboxState, preferred_day: date) -> dict[str, int]:
    first, last = sandbox.window
    days = (first + timedelta(days=offset) for offset in range((last - first).days + 1))
    return {day.isoformat(): abs((day - preferred_day).days) for day in days}


def _minutes(clock: str) -> int:
    return int(clock[:2]) * 60 + int(clock[3:])


def _time_distance(clock: str, time_range: tuple[str, str] | None) -> int:
    if time_range is None:
        return 0
    start, end = time_range
    if start == end:
        return abs(_minutes(clock) - _minutes(start))
    if start <= clock < end:
        return 0
    return min(abs(_minutes(clock) - _minutes(start)), abs(_minutes(clock) - _minutes(end)))


def _distance(
    slot: dict[str, Any], day_offsets: dict[str, int], time_range: tuple[str, str] | None
) -> tuple[int, int, str, str, str]:
    # Ties break on date, time and clinician id so the choice is deterministic.
    return (
        day_offsets[slot["date"]],
        _time_distance(slot["time"], time_range),
        slot["date"],
        slot["time"],
        slot["doctor_id"],
    )


def _changes(
    sandbox: SandboxState,
    slot: dict[str, Any],
    doctor: dict[str, Any],
    appointment_type: str,
    preferred_date: str,
    time_range: tuple[str, str] | None,
) -> list[dict[str, str]]:
    changes = []
    if slot["date"] != preferred_date:
        changes.append(_change("date", preferred_date, slot["date"]))
    if _time_distance(slot["time"], time_range):
        requested = time_range[0] if time_range[0] == time_range[1] else "-".join(time_range)
        changes.append(_change("time", requested, slot["time"]))
    if slot["doctor_id"] != doctor["id"]:
        booked = sandbox.providers_by_id[slot["doctor_id"]]["name"]
        changes.append(_change("doctor", doctor["name"], booked))
    if slot["type"] != appointment_type:
        changes.append(_change("appointment_type", appointment_type, slot["type"]))
    return changes


def _change(field: str, requested: str, booked: str) -> dict[str, str]:
    return {"field": field, "requested": requested, "booked": booked}
