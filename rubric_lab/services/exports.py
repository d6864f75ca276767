"""Result tables of the lab's studies as files: CSV, Markdown or LaTeX, in one place so the
sensitivity, coverage and refine exports read and round alike (jury.engine.stats writes them);
and their units of work, one JSON object per line or one CSV row each (`records_export`)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pandas as pd

from common.csv_export import frame_csv
from jury.engine import stats

# URL suffix -> (stats format, content type)
FORMATS = {
    "csv": ("csv", "text/csv"),
    "md": ("markdown", "text/markdown"),
    "tex": ("latex", "application/x-tex"),
}
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


RECORD_FORMATS = ("jsonl", "csv")


def records_export(records: Iterable[dict], suffix: str) -> str:
    """Records as JSON Lines, or as CSV (nested values written as JSON text)."""
    rows = list(records)
    if suffix == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows)
    if suffix != "csv":
        raise ExportFormatError(f"records are written as {' or '.join(RECORD_FORMATS)}")
    flat = [
        {
            key: json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value
            for key, value in row.items()
        }
        for row in rows
    ]
    return frame_csv(pd.DataFrame.from_records(flat))
