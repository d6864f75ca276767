"""Number formats the alignment pages and exports share: shares as percentages, coefficients
and differences with two decimals, every figure with its 95% interval, and an undefined figure
as "undefined" (its reason goes beside it), so a missing number is never mistaken for a zero."""

from __future__ import annotations

from alignment.engine.bootstrap import Estimate

UNDEFINED = "undefined"


def value_text(value: float | None, fmt: str) -> str:
    if value is None:
        return UNDEFINED
    if fmt == "share":
        return f"{100 * value:.0f}%"
    if fmt == "signed":
        return f"{value:+.2f}"
    return f"{value:.2f}"


def interval_text(estimate: Estimate, fmt: str) -> str:
    """ "[76%, 91%]", or "" when the figure has no interval."""
    if estimate.low is None or estimate.high is None:
        return ""
    return f"[{value_text(estimate.low, fmt)}, {value_text(estimate.high, fmt)}]"


def estimate_text(estimate: Estimate, fmt: str) -> str:
    """One figure with its interval: "84% [76%, 91%]"; "undefined" when it cannot be computed."""
    if estimate.value is None:
        return UNDEFINED
    interval = interval_text(estimate, fmt)
    return f"{value_text(estimate.value, fmt)} {interval}".strip()


def estimate_value_interval(estimate: Estimate, fmt: str) -> str:
    """A figure with its interval, one decimal more for percentages (a pass rate moves by
    less than a point)."""
    if estimate.value is None:
        return UNDEFINED
    if fmt == "share":
        interval = (
            ""
            if estimate.low is None
            else (f" [{100 * estimate.low:.1f}%, {100 * estimate.high:.1f}%]")
        )
        return f"{100 * estimate.value:.1f}%{interval}"
    return estimate_text(estimate, fmt)


def undefined_note(estimate: Estimate) -> str:
    """Why a figure is undefined ("" when it is defined), for a table's notes column."""
    return "" if estimate.value is not None else (estimate.undefined or "not computed")
