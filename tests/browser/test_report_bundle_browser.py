"""The static report bundle opened from file:// in Chromium: it renders its tables and figures,
the conversation search and filters work, no request leaves the page (every request that is
not a file of the folder is logged and refused), and axe finds no serious violation."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from alignment.services.bundle import report_bundle_write
from tests.browser.review_support import scored_job
from tests.browser.test_accessibility import violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def bundle(tmp_path) -> tuple[Path, int, int]:
    """The folder, how many models and how many conversations it holds."""
    job = scored_job(size=2)
    report_bundle_write([job], tmp_path / "bundle")
    return tmp_path / "bundle", job.run.agents.count(), job.conversation_results.count()


def test_the_bundle_works_from_disk_without_the_network(page, bundle):
    folder, models, conversations = bundle
    outside = []

    def refuse_outside(route):
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", refuse_outside)
    page.on("request", lambda r: r.url.startswith(("file://", "data:")) or outside.append(r.url))
    page.goto((folder / "index.html").as_uri())

    expect(page.locator("h1")).to_have_text("CareJury report")
    expect(page.locator(".model-table tbody tr")).to_have_count(models)
    assert page.locator("figure img").first.evaluate("img => img.complete && img.naturalWidth > 0")
    count = page.locator("#conversation-count")
    expect(count).to_contain_text(f"{conversations} of {conversations} conversations match")

    page.select_option("select[data-filter=outcome]", "incomplete")
    expect(count).to_contain_text(f"0 of {conversations}")
    page.select_option("select[data-filter=outcome]", "")
    page.fill("#conversation-search", "no such words anywhere zq")
    expect(count).to_contain_text(f"0 of {conversations}")
    page.fill(
        "#conversation-search", "  OFFLINE/ "
    )  # the scripted models; any case, spaces ignored
    expect(count).to_contain_text(f"{conversations} of {conversations}")
    page.locator("#conversation-list summary").first.click()
    expect(page.locator("#conversation-list .trace li").first).to_be_visible()

    assert page.console_errors == []
    # axe reads the style sheet by XMLHttpRequest, which file:// refuses (a console error of
    # axe's, not the page's): the page's own errors are checked above.
    assert violations(page) == []
    assert outside == []
