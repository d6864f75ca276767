"""LaTeX tables a paper can include as they are: a caption, a label, booktabs, a width that
fits the page (wide tables on a landscape page and shrunk only if still too wide, or split
into parts), and a first line saying which packages they need."""

import pandas as pd

from jury.engine.latex_tables import latex_tables
from tests.support.latex import latex_floats


def narrow() -> pd.DataFrame:
    return pd.DataFrame({"Model": ["a_b", "c"], "Mean": [3.4166666666666665, float("nan")]})


def wide() -> pd.DataFrame:
    columns = {"Model": ["offline/careful (scripted, not a model)"]}
    columns |= {f"R{n} pass % (95% CI)": ["87.5 [80.1, 92.3]"] for n in range(6)}
    return pd.DataFrame(columns)


def test_a_table_comes_with_its_caption_label_and_booktabs_note():
    text = latex_tables(narrow(), caption="Scores per model & rubric", label="job 3 models")
    assert text.splitlines()[0] == (
        r"% Needs \usepackage{booktabs} and \usepackage{graphicx} in the preamble."
    )
    (table,) = latex_floats(text)
    assert (table.environment, table.columns, table.rows) == ("table", 2, 2)
    assert table.caption == r"Scores per model \& rubric" and table.label == "tab:job-3-models"
    assert r"\begin{table}[htbp]" in text


def test_numbers_print_as_a_paper_prints_them():
    text = latex_tables(narrow(), caption="c", label="l")
    assert r"a\_b & 3.4167 \\" in text and r"c &  \\" in text  # no "nan"


def test_a_table_wider_than_a_portrait_page_goes_on_a_landscape_page():
    text = latex_tables(wide(), caption="Pass rates", label="pass rates")
    (table,) = latex_floats(text)
    assert table.environment == "sidewaystable" and table.columns == 7
    assert r"\usepackage{rotating}" in text.splitlines()[0]


def test_a_table_split_into_parts_gives_one_float_per_part():
    frame = pd.concat([narrow(), wide().drop(columns="Model")], axis=1)
    parts = {"means": ["Model", "Mean"], "pass rates": ["Model", *wide().columns[1:]]}
    floats = latex_floats(latex_tables(frame, caption="Scores", label="job 3", parts=parts))
    assert [(f.caption, f.label, f.columns) for f in floats] == [
        ("Scores: means", "tab:job-3-means", 2),
        ("Scores: pass rates", "tab:job-3-pass-rates", 7),
    ]
    assert [f.environment for f in floats] == ["table", "sidewaystable"]


def test_a_table_longer_than_a_page_is_cut_into_numbered_floats_that_each_fit():
    frame = pd.DataFrame({"Subgroup": [f"group {n}" for n in range(197)], "n": range(197)})
    floats = latex_floats(latex_tables(frame, caption="Subgroups", label="job 3 sensitivity"))
    assert len(floats) > 1 and sum(f.rows for f in floats) == 197
    assert [f.caption for f in floats] == [
        f"Subgroups (part {n} of {len(floats)})" for n in range(1, len(floats) + 1)
    ]
    assert floats[0].label == "tab:job-3-sensitivity"  # a reference finds the table's start
    assert len({f.label for f in floats}) == len(floats)
