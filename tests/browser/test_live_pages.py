"""A set, a run and a scoring job finish while the browser watches: every region that changes
with the work refreshes without a reload, and the polling stops after the last change."""

import re

import pytest
from playwright.sync_api import expect

from benchmark.services import cases, conversations, runs
from jury.services import juries, scoring
from llm.engine.chat import ProviderError
from tests.support.builders import enriched_set, launched_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 20_000  # a few polls (every 2 s) on a busy machine


class JudgeDown:
    def chat(self, request):
        raise ProviderError("upstream answered 503 three times", kind="server", status=503)


def wait_for_text(page, selector: str, pattern: str) -> None:
    page.locator(selector).filter(has_text=re.compile(pattern)).wait_for(timeout=TIMEOUT_MS)


def polling_stopped(page, selector: str) -> bool:
    return page.locator(selector).get_attribute("hx-trigger") is None


def open_generating_set(page, login, live_server, *, size: int, seed: int):
    """A set whose generation has not started, open in the researcher's browser."""
    benchmark_set = cases.benchmark_set_create(
        name=f"Watched set {seed}", distribution=cases.distribution_default_ensure(), size=size,
        sampler_seed=seed, generator_model="offline/standard",
    )  # fmt: skip
    login("rita")
    page.goto(f"{live_server.url}/benchmark/sets/{benchmark_set.pk}/")
    return benchmark_set


def test_a_set_page_keeps_up_with_generation_and_keeps_its_filter(page, login, people, live_server):
    benchmark_set = open_generating_set(page, login, live_server, size=6, seed=3)
    assert page.locator("#set-progress").get_by_text(re.compile(r"\b0 ready")).is_visible()
    personality = benchmark_set.entries.first().personality
    chosen = benchmark_set.entries.filter(personality=personality).count()
    assert chosen < benchmark_set.size  # else the filter would prove nothing
    page.select_option("select[name=personality]", personality)
    # A locator, not wait_for_function: the site's script policy forbids eval, also Playwright's.
    expect(page.locator("#entry-table tbody tr")).to_have_count(chosen)
    for entry_id in cases.pending_entry_ids(benchmark_set):
        cases.entry_enrich(entry_id)
    wait_for_text(page, "#set-progress", "Generation finished")
    rows = page.locator("#entry-table tbody tr")
    assert rows.count() == chosen  # the refresh kept the filter
    assert page.locator("#entry-table .badge", has_text="ready").count() == chosen
    assert page.locator("#entry-table .badge", has_text="pending").count() == 0
    assert polling_stopped(page, "#set-progress")
    assert page.console_errors == []


def test_a_run_page_and_a_scoring_job_page_keep_up_until_the_end(
    page, login, people, live_server, monkeypatch
):
    run = launched_run(enriched_set(name="Watched run set", size=2), models=("offline/careful",))
    login("rita")
    page.goto(f"{live_server.url}/benchmark/runs/{run.pk}/")
    assert page.locator("#run-costs").get_by_text("No model calls yet.").is_visible()
    assert page.locator("#run-conversations tbody tr", has_text="Pending").count() == 2
    for conversation_id in run.conversations.values_list("id", flat=True):
        conversations.conversation_execute(conversation_id)
    runs.run_dispatch(run, lambda ids: None)  # nothing left: the run finishes
    wait_for_text(page, "#run-progress h3", "Finished")
    assert page.locator("#run-conversations tbody tr", has_text="Finished").count() == 2
    assert page.locator("#run-costs tbody tr", has_text="assistant").count() == 1
    averages = page.locator("#run-averages tbody tr").first.locator("td")
    assert averages.nth(1).inner_text() == "2" and averages.nth(2).inner_text() != "-"
    assert polling_stopped(page, "#run-progress")

    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    page.goto(f"{live_server.url}/jury/jobs/{job.pk}/")
    assert page.locator("#job-counts").get_by_text(re.compile(r"^0 complete")).is_visible()
    first, second = run.conversations.all()
    for score_id in job.scores.filter(conversation=first).values_list("id", flat=True):
        scoring.judge_score_execute(score_id)
    monkeypatch.setattr(scoring, "model_router", lambda use_cache, **prices: JudgeDown())
    failing = list(job.scores.filter(conversation=second).values_list("id", flat=True))
    for score_id in failing:
        scoring.judge_score_execute(score_id)
    wait_for_text(page, "#job-progress h3", "Finished")
    wait_for_text(page, "#job-progress", f"{len(failing)} of {job.scores.count()} judge calls")
    assert page.locator("#job-counts").get_by_text(re.compile(r"^1 complete")).is_visible()
    assert page.locator("#job-unusable tbody tr", has_text="503").count() == len(failing)
    assert polling_stopped(page, "#job-progress")
    assert page.console_errors == []


def test_polls_say_the_page_sent_them_and_a_persons_change_does_not(
    page, login, people, live_server
):
    """Only the person's own requests keep a session (accounts.middleware): the live region's
    polls carry X-Sent-By-Page (static/js/session.js), the filter the person changes does not."""
    benchmark_set = open_generating_set(page, login, live_server, size=4, seed=5)
    for _ in range(2):
        with page.expect_request(is_poll, timeout=TIMEOUT_MS) as poll:
            pass
        assert poll.value.headers.get("x-sent-by-page") == "1"
    personality = benchmark_set.entries.first().personality
    with page.expect_request(is_filter_change, timeout=TIMEOUT_MS) as change:
        page.select_option("select[name=personality]", personality)
    assert "x-sent-by-page" not in change.value.headers
    assert page.console_errors == []


def is_poll(request) -> bool:
    return request.headers.get("hx-trigger") == "set-progress"


def is_filter_change(request) -> bool:
    return request.headers.get("hx-trigger") == "entry-filters"


# Set in the moment a poll has swapped the filter form in anew, before htmx has processed it.
CHANGE_RIGHT_AFTER_A_SWAP = """(value) => new Promise((done) => {
  document.body.addEventListener("htmx:oobAfterSwap", function chosen(event) {
    if (!String(event.detail.target?.id).startsWith("entry-filter")) return;
    const select = document.querySelector("select[name=personality]");
    document.body.removeEventListener("htmx:oobAfterSwap", chosen);
    select.value = value;
    select.dispatchEvent(new Event("change", {bubbles: true}));
    done(true);
  });
})"""


def test_a_filter_chosen_the_moment_a_poll_swaps_the_form_in_is_not_lost(
    page, login, people, live_server
):
    benchmark_set = open_generating_set(page, login, live_server, size=4, seed=7)
    personality = benchmark_set.entries.first().personality
    with page.expect_request(is_filter_change, timeout=TIMEOUT_MS) as change:
        page.evaluate(CHANGE_RIGHT_AFTER_A_SWAP, personality)
    assert f"personality={personality}" in change.value.url
    assert page.console_errors == []
