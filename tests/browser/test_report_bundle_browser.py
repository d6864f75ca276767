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
def bundle_folder(tmp_path) -> Path:
    job = scored_job(size=2)
    report_bundle_write([job], tmp_path / "bundle")
    return tmp_path / "bundle"


def test_the_bundle_works_from_disk_without_the_network(page, bundle_folder):
    outside = []

    def refuse_outside(route):
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", refuse_outside)
    page.on("request", lambda r: r.url.startswith(("file://", "data:")) or outside.append(r.url))
    page.goto((bundle_folder / "index.html").as_uri())

    expect(page.locator("h1")).to_have_text("CareJury report")
    expect(page.locator(".model-table tbody tr")).to_have_count(2)
    assert page.locator("figure img").first.evaluate("img => img.complete && img.naturalWidth > 0")
    count = page.locator("#conversation-count")
    expect(count).to_contain_text("4 of 4 conversations match")

    page.select_option("select[data-filter=model]", index=1)
    expect(count).to_contain_text("2 of 4 conversations match")
    page.fill("#conversation-search", "no such words anywhere zq")
    expect(count).to_contain_text("0 of 4")
    page.fill("#conversation-search", "")
    page.locator("#conversation-list summary").first.click()
    expect(page.locator("#conversation-list .trace li").first).to_be_visible()

    assert violations(page) == []
    assert outside == [] and page.console_errors == []
