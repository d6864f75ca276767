"""The formatter decides the layout, and templates stay readable in an editor.

`ruff format` lays out the Python; a `# fmt: skip` (or a `# fmt: off` region) keeps a hand
layout instead, which is worth it only for the rare table that reads better aligned. The count
of those in product code may only go down: MAX_FORMATTER_SKIPS is today's count, lower it when
you remove some. Tests and bench scripts are not counted.

Django template tags cannot span lines, so a long template line is broken between an HTML tag's
attributes or at a space the page shows: HTML collapses the newline and its indent to one space,
so the page reads the same (never inside <pre> or <textarea>, where it would not). Tests that look
for a phrase in a page squash runs of whitespace first (`tests.support.text.squashed`). No template
line is longer than MAX_TEMPLATE_LINE characters (576 were before the first pass).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MAX_FORMATTER_SKIPS = 1  # the aligned reference tables of benchmark/engine/enrichment_script.py
MAX_TEMPLATE_LINE = 160
NOT_PRODUCT = {"tests", "bench"}
SKIP = re.compile(r"#\s*fmt:\s*(skip|off)\b")


def product_sources() -> list[Path]:
    """Every Python file of the project except the tests, the bench scripts and hidden
    folders (.venv and the like)."""
    return [
        path
        for path in ROOT.rglob("*.py")
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
        and path.relative_to(ROOT).parts[0] not in NOT_PRODUCT
    ]


def test_product_code_gains_no_formatter_skip():
    found = {
        str(path.relative_to(ROOT)): len(SKIP.findall(path.read_text(encoding="utf-8")))
        for path in product_sources()
    }
    total = sum(found.values())
    assert total <= MAX_FORMATTER_SKIPS, (
        f"{total} `# fmt: skip`/`# fmt: off` in product code, at most {MAX_FORMATTER_SKIPS}: "
        "let `ruff format` lay the new code out. Most: "
        + ", ".join(f"{name} {n}" for name, n in sorted(found.items(), key=lambda x: -x[1])[:5])
    )


def test_no_template_line_is_over_the_limit():
    long_lines = [
        f"{path.relative_to(ROOT)}:{number} ({len(line)} characters)"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > MAX_TEMPLATE_LINE
    ]
    assert not long_lines, (
        f"{len(long_lines)} template line(s) over {MAX_TEMPLATE_LINE} characters: break them "
        "between attributes or at a space the page shows. " + "; ".join(long_lines)
    )


def test_no_template_has_an_empty_table_header():
    """A screen reader announces a column by its header: a column of links or buttons names
    itself with a visually hidden label (axe's empty-table-header rule, enforced on every page
    here rather than only on the pages the browser check opens)."""
    empty = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"<th(\s[^>]*)?>\s*</th>", line)
    ]
    assert not empty, "empty table header(s): " + "; ".join(empty)
