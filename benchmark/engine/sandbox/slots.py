"""Procedural appointment slots over the sandbox's 14-day booking window.

Clinics open on weekdays; each provider gets a handful of half-hour slots per day, of which
40-70% are still open (the rest are taken by other patients and never offered). Only open
slots are stored: a slot the patient books turns "booked" and turns "open" again on cancel.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

WINDOW_DAYS = 14
SLOT_TIMES = tuple(f"{minutes // 60:02d}:{minutes % 60:02d}" for minutes in range(480, 1020, 30))
SLOTS_PER_DAY = (3, 6)
OPEN_SHARE = (0.4, 0.7)
# Cumulative shares of in-person, telehealth and phone slots.
_TYPE_THRESHOLDS = ((0.5, "in-person"), (0.8, "telehealth"), (1.0, "phone"))


def window_dates(now: datetime) -> tuple[date, date]:
    """First and last bookable day (inclusive): today and the 13 days after it."""
    today = now.date()
    return today, today + timedelta(days=WINDOW_DAYS - 1)


def generate_slots(
    providers: list[dict[str, Any]], now: datetime, rng: random.Random
) -> list[dict[str, Any]]:
    """Open slots for every provider, ordered by date, time and provider."""
    today = now.date()
    earliest_today = now.strftime("%H:%M")
    slots = []
    for offset in range(WINDOW_DAYS):
        day = today + timedelta(days=offset)
        if day.weekday() >= 5:
            continue
        iso_day = day.isoformat()
        for provider in providers:
            for time in _open_times(rng):
                if offset == 0 and time <= earliest_today:
                    continue
                slots.append(_slot(provider, iso_day, time, _slot_type(rng.random())))
    slots.sort(key=lambda slot: (slot["date"], slot["time"], slot["doctor_id"]))
    return slots


def _open_times(rng: random.Random) -> list[str]:
    times = sorted(rng.sample(SLOT_TIMES, rng.randint(*SLOTS_PER_DAY)))
    open_share = rng.uniform(*OPEN_SHARE)
    return [time for time in times if rng.random() < open_share]


def _slot_type(draw: float) -> str:
    for threshold, slot_type in _TYPE_THRESHOLDS:
        if draw < threshold:
            return slot_type
    return _TYPE_THRESHOLDS[-1][1]  # draw is below 1.0: never reached


def _slot(provider: dict[str, Any], iso_day: str, time: str, slot_type: str) -> dict[str, Any]:
    return {
        "id": f"slot-{provider['id']}-{iso_day.replace('-', '')}-{time.replace(':', '')}",
        "doctor_id": provider["id"],
        "office_id": provider["office_id"],
        "date": iso_day,
        "time": time,
        "type": slot_type,
        "status": "open",
    }
