"""Who is behind: an annotator's submissions against an even pace towards the deadline.

An annotator's target in a study is their quota, or without one their fair share of their
track's seats (seats needed / licensed annotators enrolled on the track, rounded up), never
more than the study's items. Between the day they could start (the study opened, or they were
enrolled, whichever is later) and the deadline, an even pace expects
floor(target x elapsed / allowed) submissions by now; fewer is *behind*. After the deadline
anything short of the target is *overdue*. Pure: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

DONE, BEHIND, ON_TRACK, OVERDUE, NO_DEADLINE = (
    "done",
    "behind",
    "on track",
    "overdue",
    "no deadline",
)


@dataclass(frozen=True)
class Pace:
    target: int
    submitted: int
    expected: int | None  # submissions an even pace has by now (None without a deadline)
    status: str

    @property
    def behind_by(self) -> int:
        if self.status == OVERDUE:
            return self.target - self.submitted
        if self.status == BEHIND:
            return self.expected - self.submitted
        return 0

    @property
    def percent(self) -> int:
        return round(100 * min(self.submitted, self.target) / self.target) if self.target else 100


def fair_share(seats: int, people: int) -> int:
    """Each person's even share of `seats` (rounded up: the seats must all be filled)."""
    return math.ceil(seats / people) if people else seats


def annotator_target(*, quota: int | None, seats: int, people: int, items: int) -> int:
    share = quota if quota is not None else fair_share(seats, people)
    return min(share, items)


def pace(
    *, target: int, submitted: int, start: datetime, deadline: datetime | None, now: datetime
) -> Pace:
    if submitted >= target:
        return Pace(target, submitted, target, DONE)
    if deadline is None:
        return Pace(target, submitted, None, NO_DEADLINE)
    if now >= deadline:
        return Pace(target, submitted, target, OVERDUE)
    allowed = (deadline - start).total_seconds()
    elapsed = max(0.0, (now - start).total_seconds())
    expected = math.floor(target * elapsed / allowed) if allowed > 0 else target
    return Pace(target, submitted, expected, BEHIND if submitted < expected else ON_TRACK)
