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
A table may also be split into parts (`parts`: caption suffix -> its columns, the first column
repeated in each part is up to the caller): the jury's model table (15 columns with six
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
) -> str:
    """The table (or each of its parts) as a float; the package comment first."""
    if parts:
        floats = [
            _float(table[list(columns)], f"{caption}: {part}", f"{label} {part}")
            for part, columns in parts.items()
        ]
    else:
        floats = [_float(table, caption, label)]
    packages = r"\usepackage{booktabs} and \usepackage{graphicx}"
    if any(r"\begin{sidewaystable}" in text for text in floats):
        packages = r"\usepackage{booktabs}, \usepackage{graphicx} and \usepackage{rotating}"
    header = f"% Needs {packages} in the preamble.\n"
    return header + "\n".join(floats)


def _float(table: pd.DataFrame, caption: str, label: str) -> str:
    environment = "sidewaystable" if _wide(table) else "table"
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
