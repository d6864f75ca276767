"""Which (item, rubric) pairs may go to a senior clinician for adjudication.

- the clinicians disagree: two of the item's counted scores on the rubric are 2 points or more
  apart (a major disagreement, jury.engine.score_gaps);
- after the study (once it is locked, so no clinician can still be influenced): the jury mean
  and the clinicians' mean differ by 2 points or more.

A pair that qualifies both ways is offered once, for the clinicians' disagreement. Pure: no
Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean

from jury.engine.score_gaps import is_major

CLINICIANS, JURY = "clinicians", "jury"
Key = tuple[int, str]  # (item, rubric id)


@dataclass(frozen=True)
class Gap:
    item: int
    rubric: str
    reason: str  # CLINICIANS or JURY
    gap: float  # the spread of the clinicians' scores, or |jury - clinician mean|
    scores: tuple[int, ...]
    jury: float | None


def adjudication_gaps(
    scores: Mapping[Key, Sequence[int]], jury: Mapping[Key, float], *, after_study: bool
) -> list[Gap]:
    """Every qualifying (item, rubric), the largest gap first."""
    gaps = []
    for (item, rubric), values in scores.items():
        if not values:
            continue
        mean_jury = jury.get((item, rubric))
        spread = max(values) - min(values)
        if is_major(spread):
            gaps.append(Gap(item, rubric, CLINICIANS, float(spread), tuple(values), mean_jury))
        elif after_study and mean_jury is not None and is_major(mean_jury - fmean(values)):
            gap = abs(mean_jury - fmean(values))
            gaps.append(Gap(item, rubric, JURY, gap, tuple(values), mean_jury))
    return sorted(gaps, key=lambda g: (-g.gap, g.item, g.rubric))
