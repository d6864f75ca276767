"""Intervals of figures that live on a bounded scale, and what to say when one says little.

Every figure the site shows lies on a scale: a share or pass rate on 0-100%, a mean score on
1-5, a difference of two such means on -4 to +4. Its interval must stay there too.
- A share counted as successes out of n: the Wilson score interval (jury.engine.stats), which
  stays inside 0-100% and has a width for every n >= 1.
- A percentile bootstrap interval stays on the scale by itself: every resample is a figure of
  the scale.
- A normal or Student-t interval (value +/- quantile * se) can reach past an end, and an
  estimate built from two terms (prediction-powered inference) can itself fall outside. Both
  are cut at the ends of the scale (`bounded`). The true figure lies on the scale, so cutting
  an interval there never drops the truth from it (the coverage is unchanged), and a value
  moved onto the scale is never farther from the truth than before. The note says so.
- An interval of zero width (one conversation, or every conversation with the same value) is
  reported with its reason instead of as "[4.50, 4.50]", which would read as certainty.
Pure: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Bounds closer than this are one number (float sums of equal scores differ in the last bits).
ZERO_WIDTH = 1e-9


@dataclass(frozen=True)
class Scale:
    low: float
    high: float
    name: str
    percent: bool = False  # shown as a percentage

    def text(self, value: float) -> str:
        return f"{100 * value:.1f}%" if self.percent else f"{value:.2f}"

    def clip(self, value: float) -> float:
        return min(self.high, max(self.low, value))


SHARE = Scale(0.0, 1.0, "0-100%", percent=True)
SCORE = Scale(1.0, 5.0, "the 1-5 scale")
SCORE_DIFFERENCE = Scale(-4.0, 4.0, "-4 to +4")


@dataclass(frozen=True)
class Interval:
    """A value on its scale, its interval (None when there is none) and what a reader must
    know about them ("" when nothing)."""

    value: float
    low: float | None
    high: float | None
    note: str = ""


def normal_interval(
    value: float, se: float, *, scale: Scale, quantile: float, n: int, unit: str = "conversation"
) -> Interval:
    """value +/- quantile * se on the scale (`bounded`); no interval, with why, when the
    standard error is unknown (NaN: one unit, or a stratum with one)."""
    if not math.isfinite(se):
        return bounded(value, None, None, scale=scale, n=n, unit=unit)
    return bounded(value, value - quantile * se, value + quantile * se, scale=scale, n=n, unit=unit)


def bounded(
    value: float,
    low: float | None,
    high: float | None,
    *,
    scale: Scale,
    n: int,
    unit: str = "conversation",
) -> Interval:
    """The value and its interval cut at the ends of the scale, noting what was cut, and a
    zero-width or missing interval with its reason."""
    notes = []
    shown = scale.clip(value)
    if shown != value:
        notes.append(
            f"the estimate, {scale.text(value)}, lies outside {scale.name} and is shown at its end"
        )
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        notes.append(missing_note(n, unit))
        return Interval(shown, None, None, "; ".join(note for note in notes if note))
    cut_low, cut_high = scale.clip(low), scale.clip(high)
    if cut_high - cut_low <= ZERO_WIDTH:
        notes.append(
            f"the whole interval lies outside {scale.name}"
            if high - low > ZERO_WIDTH
            else zero_width_note(n, unit)
        )
    elif (cut_low, cut_high) != (low, high):
        notes.append(cut_note(scale))
    return Interval(shown, cut_low, cut_high, "; ".join(notes))


def interval_note(
    n: int,
    low: float,
    high: float,
    *,
    unit: str = "conversation",
    same: str = "",
    cut: bool = False,
    scale: Scale = SCORE,
) -> str:
    """What to say beside an interval already on its scale: why it is missing (NaN bounds) or
    of zero width, or that it was `cut` at the end of the scale ("" when it is an ordinary
    interval). `same` names the cause of a zero width over several units (default: every
    unit has the same value)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return missing_note(n, unit)
    if high - low > ZERO_WIDTH:
        return cut_note(scale) if cut else ""
    return f"zero width: {same}" if same and n != 1 else zero_width_note(n, unit)


def cut_note(scale: Scale = SCORE) -> str:
    return f"interval cut at the end of {scale.name}"


def missing_note(n: int, unit: str = "conversation") -> str:
    if n == 0:
        return f"no {unit}"
    if n == 1:
        return f"no interval: one {unit}"
    return "no interval"


def zero_width_note(n: int, unit: str = "conversation") -> str:
    if n == 1:
        return f"zero width: one {unit}"
    return f"zero width: every {unit} has the same value"
