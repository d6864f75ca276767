"""A report table as typed rows: the numbers the table is computed from (never the text its
exports print, like "2.66 [2.25, 3.06]"), and each estimate with its interval as one object
{estimate, low, high}."""

from __future__ import annotations

import pandas as pd

from api.frames import frame_rows
from jury.engine import stats
from jury.services import reports

# Tables whose interval columns are plain `low`/`high` or `ci_low`/`ci_high`: the estimate
# they bound.
BARE_ESTIMATES = {
    "reliability": "pass_hat_k",
    "variance": "variance",
    "sensitivity": "mean",
    "comparison": "mean_difference",
}


def table_frame(report: reports.Report, name: str) -> pd.DataFrame:
    """The numbers behind report table `name` (one of reports.EXPORT_TABLES)."""
    if name == "models":
        return reports.model_table(report).rename_axis("model").reset_index()
    if name == "spread":
        sd_table = stats.model_sd_table(
            report.rubric_scores, report.conversations, rubric_order=list(report.rubrics)
        )
        return sd_table.rename_axis("model").reset_index()
    if name == "outcomes":
        return pd.DataFrame(reports.outcome_rows(report))
    if name == "comparison":
        return reports.comparisons(report, reports.model_table(report))
    return reports.export_frame(report, name)


def table_rows(frame: pd.DataFrame, name: str) -> tuple[list[str], list[dict]]:
    """The frame's columns (an interval's three as one) and its rows."""
    intervals = interval_columns(list(frame.columns), BARE_ESTIMATES.get(name))
    columns, consumed = [], set()
    for column in frame.columns:
        for interval, parts in intervals.items():
            if column == parts[0]:
                columns.append(interval)
                consumed.update(parts)
        if column not in consumed:
            columns.append(column)
    rows = []
    for row in frame_rows(frame):
        typed = {key: value for key, value in row.items() if key not in consumed}
        for interval, (estimate, low, high) in intervals.items():
            typed[interval] = {"estimate": row[estimate], "low": row[low], "high": row[high]}
        rows.append({column: typed[column] for column in columns})
    return columns, rows


def interval_columns(columns: list[str], bare_estimate: str | None) -> dict[str, tuple]:
    """Interval name -> (estimate, low, high) columns: `x_low`/`x_high` bound `x`, `x_mean` or
    `x_rate`; plain `low`/`high` and `ci_low`/`ci_high` bound the table's bare estimate."""
    found = {}
    for low in columns:
        if low not in ("low", "ci_low") and not low.endswith("_low"):
            continue
        prefix = low.removesuffix("low").removesuffix("_")
        high = f"{prefix}_high" if prefix else "high"
        if high not in columns:
            continue
        if prefix in ("", "ci"):
            estimate, name = bare_estimate, bare_estimate
        else:
            candidates = (prefix, f"{prefix}_mean", f"{prefix}_rate")
            estimate, name = next((c for c in candidates if c in columns), None), prefix
        if estimate in columns:
            found[name] = (estimate, low, high)
    return found
