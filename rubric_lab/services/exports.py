"""Result tables of the lab's studies as files: CSV, Markdown or LaTeX, in one place so the
sensitivity, coverage and refine exports read and round alike (jury.engine.stats writes them)."""

from __future__ import annotations

import pandas as pd

from jury.engine import stats

# URL suffix -> (stats format, content type)
FORMATS = {"csv": ("csv", "text/csv"), "md": ("markdown", "text/markdown"),
           "tex": ("latex", "application/x-tex")}  # fmt: skip
DECIMALS = 4


class ExportFormatError(ValueError):
    """An export asked for in a format the lab does not write."""


def table_export(table: pd.DataFrame, suffix: str, *, caption: str, label: str) -> str:
    """`caption` and `label` are the LaTeX table's; CSV and Markdown carry none."""
    if suffix not in FORMATS:
        raise ExportFormatError(f"export format must be one of {', '.join(FORMATS)}")
    # A figure that does not exist (no scored pair, an undefined precision) is left blank,
    # never written as "nan".
    written = table.round(DECIMALS).astype(object).where(table.notna(), "")
    return stats.export_table(written, FORMATS[suffix][0], caption=caption, label=label)


def content_type(suffix: str) -> str:
    return f"{FORMATS[suffix][1]}; charset=utf-8"
