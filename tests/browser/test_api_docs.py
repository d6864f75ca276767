"""The API's docs page runs in a real browser under the site's Content-Security-Policy: its
scripts are the vendored Swagger UI files, nothing inline, nothing from a CDN."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_page_renders_every_resource_without_breaking_the_script_policy(
    page, login, live_server, people
):
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    login("rita")
    page.goto(f"{live_server.url}/api/v1/docs")
    page.get_by_text("/api/v1/runs/{run_id}/conversations", exact=True).wait_for(timeout=30_000)
    assert page.locator(".opblock").count() >= 20
    assert all(url.startswith(live_server.url) for url in requests)  # no CDN
    violations = [e for e in page.console_errors if "Content Security Policy" in e]
    assert violations == []
