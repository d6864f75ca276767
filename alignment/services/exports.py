"""The agreement table in the paper's shape, as text cells for pages and exports (CSV, Markdown,
LaTeX through jury.engine.stats.export_table), and the number formats they share.

Shares print as percentages, coefficients and differences with two decimals; every figure
carries its 95% bootstrap interval, and an undefined figure prints as "undefined" with its
reason in the Notes column, so a reader never mistakes a missing number for a zero."""

from __future__ import annotations

import pandas as pd

from alignment.engine.bootstrap import Estimate
from alignment.services.reports import StudyReport
from annotation.models import Study
from jury.engine.stats import export_table

EXPORT_FORMATS = {  # URL suffix -> (jury.engine.stats format, content type)
    "csv": ("csv", "text/csv"),
    "md": ("markdown", "text/markdown"),
    "tex": ("latex", "application/x-tex"),
}
UNDEFINED = "undefined"
# (column, RubricAgreement field, format) of the paper's table, in order.
PAPER_COLUMNS = (
    ("Jury-clinician adjacent", "jury_adjacent", "share"),
    ("Chance adjacent", "jury_adjacent_chance", "share"),
    ("Human-human adjacent", "human_adjacent", "share"),
    ("Mean signed diff (jury - clinician)", "mean_signed_diff", "signed"),
    ("Alpha (clinicians)", "alpha_clinicians", "number"),
    ("Alpha (with jury)", "alpha_with_jury", "number"),
)


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


def agreement_rows(report: StudyReport) -> pd.DataFrame:
    """One row per judged rubric: n, the paper's figures with intervals, and notes saying why
    any figure is undefined."""
    rows = []
    for section in report.sections:
        agreement = section.agreement
        row = {
            "Rubric": section.rubric.name,
            "Version": f"v{section.rubric.version}",
            "Conversations": agreement.n_items,
            "Ratings": agreement.n_ratings,
            "Raters": agreement.n_raters,
        }
        notes = []
        for column, name, fmt in PAPER_COLUMNS:
            estimate = getattr(agreement, name)
            row[column] = estimate_text(estimate, fmt)
            if estimate.value is None:
                notes.append(f"{column}: {estimate.undefined or 'not computed'}")
        row["Major disagreements"] = agreement.major_disagreements
        row["Notes"] = "; ".join(notes)
        rows.append(row)
    columns = ["Rubric", "Version", "Conversations", "Ratings", "Raters"]
    columns += [c for c, _, _ in PAPER_COLUMNS] + ["Major disagreements", "Notes"]
    return pd.DataFrame(rows, columns=columns)


def agreement_export(report: StudyReport, suffix: str, *, study: Study) -> str:
    if suffix not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {', '.join(EXPORT_FORMATS)}")
    caption = (
        f"Jury-clinician agreement per judged rubric, {study.name}: each figure with its 95% "
        "bootstrap interval over conversations"
    )
    return export_table(
        agreement_rows(report), EXPORT_FORMATS[suffix][0], caption=caption,
        label=f"study {study.pk} agreement",
    )  # fmt: skip
