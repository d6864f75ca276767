"""Every CSV the site writes goes through here: text a spreadsheet would run as a formula is
neutralised, numbers stay numbers.

A spreadsheet reads a cell starting with =, +, -, @, a tab or a carriage return as a formula
(CSV injection): annotator feedback `=HYPERLINK("http://...")` would open as a live link, and
worse. Following OWASP's advice such a text cell gets one leading apostrophe, so spreadsheets
show it as text. Only text is touched: a value that is a number (a mean difference of -0.5) is
written as that number, unquoted, and stays a number for every reader. Text is text whatever
it looks like: feedback "+1" or "-2" and a formatted figure "-0.10 [-0.30, +0.10]" are
neutralised like any other text that starts with a formula character (a spreadsheet would
otherwise show "#NAME?" for the figure).

Text that already starts with apostrophes before a formula character gets one more, so
`restore_cell` (used by the site's own imports) gives back exactly what was written. Rows end
in CRLF (RFC 4180): the csv module quotes a cell holding any character of the line ending,
so with CRLF a stray carriage return or newline inside a cell is always quoted, never a row
break. Pure: no Django.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable, Sequence
from numbers import Number

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"
LINE_END = "\r\n"


def safe_cell(value):
    """A value as a CSV cell: numbers, booleans and missing values unchanged; anything else as
    text, with a leading apostrophe when a spreadsheet would read it as a formula."""
    if value is None or isinstance(value, Number):
        return value
    text = str(value)
    return ESCAPE + text if _formula_like(text) else text


def restore_cell(text: str) -> str:
    """The text `safe_cell` was given, from what it wrote."""
    if text.startswith(ESCAPE) and _formula_like(text[1:]):
        return text[1:]
    return text


def rows_csv(rows: Iterable[Sequence], *, header: Sequence[str]) -> str:
    """A header and rows (sequences of values) as CSV text, every cell through `safe_cell`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=LINE_END)
    writer.writerow([safe_cell(name) for name in header])
    writer.writerows([safe_cell(value) for value in row] for row in rows)
    return out.getvalue()


def frame_csv(frame: pd.DataFrame, *, float_format: str | None = None) -> str:
    """A table's columns (not its index) as CSV text: column names and text cells through
    `safe_cell`; numeric columns are written by pandas as they are."""
    safe = frame.copy()
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if not pd.api.types.is_numeric_dtype(column):
            safe.isetitem(position, column.map(_frame_cell))
    safe.columns = [safe_cell(name) for name in frame.columns]
    return safe.to_csv(index=False, lineterminator=LINE_END, float_format=float_format)


def _frame_cell(value):
    if not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value):
        return value  # NaN, None, NA: pandas writes an empty cell
    return safe_cell(value)


def _formula_like(text: str) -> bool:
    return text.lstrip(ESCAPE).startswith(FORMULA_STARTS)


def rows_csv_stream(rows: Iterable[Sequence], *, header: Sequence[str], batch: int = 5000):
    """`rows_csv` as a stream of text chunks (header first, then `batch` rows at a time), for
    exports too long to hold as one string."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=LINE_END)
    writer.writerow([safe_cell(name) for name in header])
    rows = iter(rows)
    while True:
        chunk = list(itertools.islice(rows, batch))
        writer.writerows([safe_cell(value) for value in row] for row in chunk)
        yield out.getvalue()
        out.seek(0)
        out.truncate()
        if not chunk:
            return
