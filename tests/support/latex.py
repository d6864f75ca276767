"""A structural check of the LaTeX tables the site writes, for machines without TeX: every
environment closed in order, braces balanced, each float with one caption and one label, every
row of a tabular with as many cells as its column spec, and the package comment naming what
the text uses, and no float longer than a page holds."""

import re
from dataclasses import dataclass

FLOATS = ("table", "sidewaystable")
# Rows of \small type a float can hold below its caption: a portrait text block, and a
# landscape page (its height is the block's width). A float cannot break across pages.
PAGE_ROWS = {"table": 45, "sidewaystable": 30}


@dataclass
class LatexFloat:
    environment: str
    caption: str
    label: str
    columns: int
    rows: int


def latex_floats(text: str) -> list[LatexFloat]:
    """The floats of `text` once its structure is checked (AssertionError otherwise)."""
    first, *body = text.splitlines()
    assert first.startswith("% Needs \\usepackage{booktabs}"), first
    _check_packages(first, text)
    _check_environments(text)
    _check_braces("\n".join(line for line in body if not line.startswith("%")))
    floats = re.findall(r"\\begin\{(sidewaystable|table)\}(.*?)\\end\{\1\}", text, flags=re.DOTALL)
    assert floats, "no table float"
    return [_float(environment, content) for environment, content in floats]


def _check_packages(comment: str, text: str) -> None:
    assert "graphicx" in comment or "\\resizebox" not in text
    assert "rotating" in comment or "sidewaystable" not in text


def _check_environments(text: str) -> None:
    open_ = []
    for kind, name in re.findall(r"\\(begin|end)\{(\w+)\}", text):
        if kind == "begin":
            open_.append(name)
        else:
            assert open_ and open_.pop() == name, f"\\end{{{name}}} closes nothing open"
    assert open_ == [], f"never closed: {open_}"


def _check_braces(text: str) -> None:
    depth = 0
    for char in re.sub(r"\\[{}&%$#_]", "", text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        assert depth >= 0, "a } closes nothing"
    assert depth == 0, f"{depth} brace(s) left open"


def _float(environment: str, content: str) -> LatexFloat:
    captions = re.findall(r"\\caption\{(.*)\}", content)
    labels = re.findall(r"\\label\{(tab:[a-z0-9-]+)\}", content)
    assert len(captions) == 1 and len(labels) == 1, content[:300]
    (spec,) = re.findall(r"\\begin\{tabular\}\{([lr]+)\}", content)
    rows = [line for line in content.splitlines() if line.endswith(r"\\")]
    for row in rows:
        assert len(re.findall(r"(?<!\\)&", row)) == len(spec) - 1, row
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert content.count(rule) == 1, rule
    assert r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%" in content
    assert len(rows) - 1 <= PAGE_ROWS[environment], f"{len(rows) - 1} rows run off the page"
    return LatexFloat(environment, captions[0], labels[0], len(spec), len(rows) - 1)
