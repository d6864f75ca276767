"""The documentation site's sources: the README stays a short front page, and every screenshot
the docs show is one scripts/screenshots.py takes from the demo (so none goes stale unseen).
The site's links and navigation are checked by `mkdocs build --strict` in scripts/test.sh."""

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_MOST_LINES = 200


def screenshot_script():
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts/screenshots.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def images_the_docs_show() -> set[str]:
    pages = [ROOT / "README.md", *DOCS.rglob("*.md")]
    found = (re.findall(r"screenshots/([\w.-]+\.png)", p.read_text("utf-8")) for p in pages)
    return {name for names in found for name in names}


def test_the_script_takes_every_screenshot_the_docs_show_and_no_other():
    taken = {shot.file for shot in screenshot_script().SHOTS}
    assert taken == images_the_docs_show()


def test_the_screenshots_folder_holds_exactly_the_scripts_images():
    taken = {shot.file for shot in screenshot_script().SHOTS}
    assert {path.name for path in (DOCS / "screenshots").iterdir()} == taken


def test_every_screenshot_is_reached_by_a_view_of_the_script():
    script = screenshot_script()
    assert {shot.view for shot in script.SHOTS} <= set(script.VIEWS)


def test_the_readme_stays_a_front_page_with_links_to_the_docs():
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= README_MOST_LINES
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme
    assert "(docs/index.md)" in readme
