r"""Text tables as LaTeX a paper can include as they are: booktabs rules, a caption and a
label, and a width that fits the page.

Each table is a float (`table`) holding one `tabular`, centred in `\small`, with `\caption`
and `\label{tab:...}`. Fitting the page, in two steps:
- a table whose text is wider than a portrait text block holds (about PORTRAIT_CHARACTERS
  characters of `\small` type, column gaps included) is set on a landscape page of its own
  (`sidewaystable`, package rotating);
- every tabular sits in a shrink-only box, `\resizebox{\ifdim\width>\linewidth\linewidth\else
  \width\fi}{!}{...}` (package graphicx): a table already narrower than the text is left at
  its natural size, a wider one is scaled down to the text width, so none runs off the page.
A float cannot break across pages: a table with more rows than a page holds (PAGE_ROWS) is
cut into consecutive floats, each with the header and a caption saying which part it is.
A table may also be split into parts (`parts`: caption suffix -> its columns, the first column
repeated in each part is up to the caller): the jury's model table (17 columns with six
rubrics) is written as one table of mean scores and one of pass rates rather than shrunk to
an unreadable size. The first lines are comments naming the packages the tables need.
Pure: no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pandas as pd

PORTRAIT_CHARACTERS = 90
# Rows of `\small` type a float holds on one page, below its caption: a portrait text block,
# and a landscape page, whose height is only the text block's width. A float cannot break
# across pages, so a longer table is cut into floats of at most this many rows.
PAGE_ROWS = {"table": 40, "sidewaystable": 25}
DECIMALS = 4
COLUMN_GAP_CHARACTERS = 3  # \tabcolsep on both sides, in characters of \small type

_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_SHRINK_TO_TEXT = r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%"


def latex_escape(value) -> str:
    return "".join(_SPECIALS.get(char, char) for char in str(value))


def latex_label(text: str) -> str:
    """`tab:` and the text as lower-case words joined by hyphens (labels take no specials)."""
    return "tab:" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def latex_tables(
    table: pd.DataFrame,
    *,
    caption: str,
    label: str,
    parts: Mapping[str, Sequence[str]] | None = None,
    part_captions: Mapping[str, str] | None = None,
) -> str:
    """The table (or each of its parts) as a float; the package comment first. A part's
    caption is its own from `part_captions`, else `caption` followed by the part's name."""
    if parts:
        captions = part_captions or {}
        floats = [
            text
            for part, columns in parts.items()
            for text in _page_floats(
                table[list(columns)], captions.get(part, f"{caption}: {part}"), f"{label} {part}"
            )
        ]
    else:
        floats = _page_floats(table, caption, label)
    packages = r"\usepackage{booktabs} and \usepackage{graphicx}"
    if any(r"\begin{sidewaystable}" in text for text in floats):
        packages = r"\usepackage{booktabs}, \usepackage{graphicx} and \usepackage{rotating}"
    header = f"% Needs {packages} in the preamble.\n"
    return header + "\n".join(floats)


def _page_floats(table: pd.DataFrame, caption: str, label: str) -> list[str]:
    """The table as one float, or, when it has more rows than a page holds, as floats of
    PAGE_ROWS rows each on the same kind of page, numbered in their captions; the first keeps
    the label, so a paper's reference points at the start of the table."""
    environment = "sidewaystable" if _wide(table) else "table"
    size = PAGE_ROWS[environment]
    if len(table) <= size:
        return [_float(table, caption, label, environment)]
    count = math.ceil(len(table) / size)
    return [
        _float(
            table.iloc[index * size : (index + 1) * size],
            f"{caption} (part {index + 1} of {count})",
            label if index == 0 else f"{label} part {index + 1}",
            environment,
        )
        for index in range(count)
    ]


def _float(table: pd.DataFrame, caption: str, label: str, environment: str) -> str:
    placement = "" if environment == "sidewaystable" else "[htbp]"
    lines = [
        rf"\begin{{{environment}}}{placement}",
        r"\centering",
        r"\small",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{latex_label(label)}}}",
        _SHRINK_TO_TEXT,
        r"\begin{tabular}{l" + "r" * (len(table.columns) - 1) + "}",
        r"\toprule",
        _row(table.columns),
        r"\midrule",
        *(_row(values) for values in table.itertuples(index=False)),
        r"\bottomrule",
        r"\end{tabular}%",
        "}",
        rf"\end{{{environment}}}",
    ]
    return "\n".join(lines) + "\n"


def _row(cells) -> str:
    return " & ".join(latex_escape(_text(cell)) for cell in cells) + r" \\"


def _text(value) -> str:
    """A float to at most DECIMALS places (a paper prints 3.4167, not 3.4166666666666665); a
    missing figure as an empty cell, never "nan"."""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        text = f"{value:.{DECIMALS}f}"
        return "0" if float(text) == 0 else text.rstrip("0").rstrip(".")
    return str(value)


def _wide(table: pd.DataFrame) -> bool:
    """Wider than a portrait text block: the longest text of each column plus the gaps."""
    widths = [
        max([len(str(name)), *(len(str(value)) for value in table.iloc[:, position])])
        for position, name in enumerate(table.columns)
    ]
    return sum(widths) + COLUMN_GAP_CHARACTERS * len(widths) > PORTRAIT_CHARACTERS
