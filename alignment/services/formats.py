"""Number formats the alignment pages and exports share: shares as percentages, coefficients
and differences with two decimals, every figure with its 95% interval, and an undefined figure
as "undefined" (its reason goes beside it), so a missing number is never mistaken for a zero.
An interval's note (zero width and why, cut at the end of the scale) is printed with it."""

from __future__ import annotations

from alignment.engine.bootstrap import Estimate
from jury.engine.intervals import ZERO_WIDTH

UNDEFINED = "undefined"


def value_text(value: float | None, fmt: str, *, fine: bool = False) -> str:
    """`fine`: percentages with one decimal (a pass rate moves by less than a point)."""
    if value is None:
        return UNDEFINED
    if fmt == "share":
        return f"{100 * value:.1f}%" if fine else f"{100 * value:.0f}%"
    if fmt == "signed":
        return f"{value:+.2f}"
    return f"{value:.2f}"


def interval_text(estimate: Estimate, fmt: str, *, fine: bool = False) -> str:
    """ "[76%, 91%]"; with the estimate's note when it has one ("[4.62, 5.00] (interval cut
    at the end of the 1-5 scale)"); an interval of zero width or none as its note alone
    ("(zero width: one conversation)"), never as "[4.50, 4.50]"; "" when there is nothing."""
    note = f"({estimate.note})" if estimate.note else ""
    if estimate.low is None or estimate.high is None:
        return note
    if estimate.high - estimate.low <= ZERO_WIDTH:
        return note or "(zero width)"
    low, high = (value_text(bound, fmt, fine=fine) for bound in (estimate.low, estimate.high))
    return f"[{low}, {high}] {note}".strip()


def estimate_text(estimate: Estimate, fmt: str, *, fine: bool = False) -> str:
    """One figure with its interval: "84% [76%, 91%]"; "undefined" when it cannot be computed."""
    if estimate.value is None:
        return UNDEFINED
    interval = interval_text(estimate, fmt, fine=fine)
    return f"{value_text(estimate.value, fmt, fine=fine)} {interval}".strip()


def estimate_value_interval(estimate: Estimate, fmt: str) -> str:
    """A figure with its interval, one decimal more for percentages."""
    return estimate_text(estimate, fmt, fine=True)


def undefined_note(estimate: Estimate) -> str:
    """Why a figure is undefined ("" when it is defined), for a table's notes column."""
    return "" if estimate.value is not None else (estimate.undefined or "not computed")
