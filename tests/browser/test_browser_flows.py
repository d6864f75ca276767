"""Flows that need JavaScript, in a real browser: htmx filters and live progress."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_leads_to_the_role_home_with_its_navigation(page, login, people):
    login("rita")
    nav = page.locator("nav.nav")
    assert nav.get_by_text("Benchmark sets").is_visible()
    assert nav.get_by_text("People").count() == 0  # admins only
    assert page.console_errors == []


def test_an_entry_filter_swaps_the_table_in_place(page, login, people, finished_run, live_server):
    login("rita")
    benchmark_set = finished_run.benchmark_set
    page.goto(f"{live_server.url}/benchmark/sets/{benchmark_set.pk}/")
    rows = page.locator("#entry-table tbody tr")
    assert rows.count() == 4
    value = benchmark_set.entries.first().personality
    expected = benchmark_set.entries.filter(personality=value).count()
    page.select_option("select[name=personality]", value)
    # A locator, not wait_for_function: the site's script policy forbids eval, also Playwright's.
    expect(page.locator("#entry-table tbody tr")).to_have_count(expected)
    page.wait_for_url(re.compile("personality="))  # the filtered view can be bookmarked
    assert page.console_errors == []


def test_the_run_page_shows_progress_and_the_trace_opens(
    page, login, people, finished_run, live_server
):
    login("rita")
    page.goto(f"{live_server.url}/benchmark/runs/{finished_run.pk}/")
    assert page.locator("#run-progress").get_by_text(re.compile("4 finished")).is_visible()
    page.locator("table.table a[href*='/conversations/']").first.click()
    page.wait_for_url(re.compile("/benchmark/conversations/"))
    assert page.locator(".msg.patient").count() >= 1
    tool = page.locator("details.tool").first
    tool.locator("summary").click()
    assert tool.locator("pre").is_visible()
    assert page.console_errors == []


def test_a_running_run_updates_its_progress_without_a_reload(
    page, login, people, finished_run, live_server
):
    from django.utils import timezone

    from benchmark.models import ConversationStatus
    from jobs.models import JobStatus, WorkerHeartbeat

    finished_run.status = JobStatus.RUNNING
    finished_run.save()
    # A worker reporting: without one the page says the conversation is only marked running.
    WorkerHeartbeat.objects.create(
        hostname="worker-host", pid=1, process_started_at=timezone.now(), mode="embedded",
        last_seen_at=timezone.now(),
    )  # fmt: skip
    waiting = finished_run.conversations.first()
    waiting.status = ConversationStatus.RUNNING
    waiting.save()
    login("rita")
    page.goto(f"{live_server.url}/benchmark/runs/{finished_run.pk}/")
    progress = page.locator("#run-progress")
    assert progress.get_by_text(re.compile("1 running")).is_visible()
    waiting.status = ConversationStatus.FINISHED
    waiting.save()
    progress.get_by_text(re.compile("0 running")).wait_for(timeout=10_000)
