"""Every progress bar has an accessible name, or a screen reader announces a bare number (axe's
aria-progressbar-name rule, found on the run page by tests/browser/test_accessibility.py). The
browser test reaches a few pages; this reads every template, so a bar on a page it does not
visit is held to the same rule."""

import re
from pathlib import Path

from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
PROGRESS_BAR = re.compile(r'<\w+[^>]*role="progressbar"[^>]*>')
# Partials whose bar is named by the page that includes them (`with label="..."`).
LABELLED_PARTIALS = ("benchmark/_progress.html", "rubric_lab/_work_progress.html")
INCLUDE = re.compile(
    r'{%\s*include\s+"(' + "|".join(map(re.escape, LABELLED_PARTIALS)) + r')"[^%]*%}'
)


def templates() -> dict[str, str]:
    return {
        str(path.relative_to(TEMPLATES)): path.read_text() for path in TEMPLATES.rglob("*.html")
    }


def test_every_progress_bar_of_the_templates_has_a_name():
    bars = {name: PROGRESS_BAR.findall(text) for name, text in templates().items()}
    assert sum(map(len, bars.values())) >= 7  # the pattern still finds the site's bars
    unnamed = {
        name: tag
        for name, tags in bars.items()
        for tag in tags
        if not re.search(r'aria-label="[^"]+"', tag)
    }
    assert unnamed == {}


def test_every_page_that_includes_a_progress_partial_names_its_bar():
    includes = {
        (name, match.group(0))
        for name, text in templates().items()
        for match in INCLUDE.finditer(text)
    }
    assert len(includes) >= 5
    assert {include for include in includes if not re.search(r'label="[^"]+"', include[1])} == set()
