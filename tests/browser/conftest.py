"""Playwright driving Debian's Chromium against the live test server."""

import os

import pytest

from accounts.models import Role
from benchmark.services.inline import run_execute_inline
from common.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.conftest import PASSWORD, make_user
from tests.support.builders import enriched_set, launched_run

# Playwright's sync API keeps an event loop on this thread; Django's ORM would refuse to run
# beside it, though the fixtures here never share a connection with that loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    context.close()


@pytest.fixture
def login(page, live_server):
    def log_in(username: str) -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")

    return log_in


@pytest.fixture
def people(transactional_db):
    return {
        "researcher": make_user("rita", Role.RESEARCHER),
        "admin": make_user("adam", Role.ADMIN),
    }


@pytest.fixture
def finished_run(transactional_db):
    run = launched_run(enriched_set(name="Browser set"), name="Browser run")
    run_execute_inline(run, threads=2)
    return run
