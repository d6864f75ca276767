"""The review screen in a real browser, keyboard only: score, reload mid-item and find the
draft, submit with a key and land on the next item; and a second tab's stale save is shown."""

from urllib.parse import parse_qs

import pytest
from playwright.sync_api import expect

from tests.browser.review_support import (
    PANEL_SIZE,
    checked_scores,
    open_first_item,
    saved,
    target_study_for_nora,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def target_study(transactional_db):
    return target_study_for_nora()


def test_an_item_is_scored_reloaded_and_submitted_from_the_keyboard(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    first_item = page.url
    assert page.locator(".rubric.focused").count() == 1
    page.keyboard.press("4")
    page.keyboard.press("j")
    page.keyboard.press("2")
    saved(page)
    page.keyboard.press("f")  # write feedback, then leave the field with Escape
    page.keyboard.type("Booked before confirming; 5 stars would be wrong.")
    page.keyboard.press("Escape")
    expect(page.locator("#version")).to_have_value("3")
    expect(page.locator("#save-status")).to_contain_text("Saved")
    assert checked_scores(page) == ["4", "2"]  # typing "5" in the text field scored nothing

    page.reload()  # mid-item: the draft comes back from the server
    assert checked_scores(page) == ["4", "2"]
    feedback = page.locator("textarea[name='feedback-triage_quality']")
    assert feedback.input_value() == "Booked before confirming; 5 stars would be wrong."
    page.keyboard.press("?")
    assert page.locator("#shortcut-help").is_visible()
    page.keyboard.press("?")
    assert page.locator("#shortcut-help").is_hidden()

    # After the reload the first rubric still to score has the focus.
    assert page.locator(".rubric.focused legend").inner_text().startswith("3")
    for _ in range(PANEL_SIZE - 2):
        page.keyboard.press("3")
        page.keyboard.press("j")
    assert page.locator(".rubric.focused legend").inner_text().startswith(str(PANEL_SIZE))
    saved(page)
    expect(page.locator("#missing")).to_contain_text("Complete")
    page.keyboard.press("s")
    page.wait_for_url(lambda url: "/annotation/items/" in url and url != first_item)
    assert checked_scores(page) == []  # a fresh item
    assert page.console_errors == []


def test_the_page_posts_only_what_changed_and_a_field_emptied_there_is_cleared(
    page, login, target_study, live_server
):
    """review.js posts the fields changed since the server confirmed them, each with the value
    it started from; the server keeps what was not sent and clears what the annotator
    emptied."""
    login("nora")
    open_first_item(page, live_server, target_study)
    posts = []
    page.on("request", lambda r: "/autosave/" in r.url and posts.append(r.post_data))
    page.keyboard.press("4")
    page.keyboard.press("f")
    page.keyboard.type("Booked too early.")
    page.keyboard.press("Escape")
    expect(page.locator("#version")).to_have_value("2")
    page.locator("textarea[name='overall_comment']").fill("Fine otherwise.")
    expect(page.locator("#version")).to_have_value("3")
    page.locator("textarea[name='feedback-clinical_safety']").fill("")
    expect(page.locator("#version")).to_have_value("4")

    assert parse_qs(posts[0], keep_blank_values=True) == {
        "version": ["0"], "score-clinical_safety": ["4"], "base-score-clinical_safety": [""],
    }  # fmt: skip
    assert parse_qs(posts[-1], keep_blank_values=True) == {
        "version": ["3"],
        "feedback-clinical_safety": [""],
        "base-feedback-clinical_safety": ["Booked too early."],
    }
    page.reload()
    assert checked_scores(page) == ["4"]
    assert page.locator("textarea[name='feedback-clinical_safety']").input_value() == ""
    assert page.locator("textarea[name='overall_comment']").input_value() == "Fine otherwise."
    assert page.console_errors == []


def test_an_event_is_linked_to_the_focused_rubric_and_survives_a_reload(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    page.keyboard.press("j")
    link = page.locator("[data-link-event]").nth(1)
    assert "TQ" in link.inner_text()  # the button names the focused rubric
    event_id = link.get_attribute("data-link-event")
    link.click()
    chip = page.locator(f"#links-triage_quality a[href='#{event_id}']")
    chip.wait_for()
    page.reload()
    assert page.locator(f"#links-triage_quality a[href='#{event_id}']").count() == 1
    assert page.console_errors == []


def test_a_stale_tab_sees_the_conflict_instead_of_overwriting(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    other = page.context.new_page()
    other.goto(page.url)
    other.keyboard.press("5")
    saved(other)
    page.keyboard.press("1")  # this tab still shows version 0
    status = page.locator("#save-status.conflict")
    status.wait_for()
    assert "Saved from another tab at" in status.inner_text()
    page.reload()
    assert checked_scores(page) == ["5"]


def test_the_heartbeat_is_sent_only_while_the_page_is_visible_and_in_use(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    beats = []
    page.on("request", lambda r: "/heartbeat/" in r.url and beats.append(r.url))
    page.clock.install()
    page.reload()  # the fake clock is in place from the start: one beat on load
    page.locator("#heartbeat").wait_for(state="attached")
    page.wait_for_timeout(300)
    assert len(beats) == 1
    hide = "v => Object.defineProperty(document, 'visibilityState', {value: v, configurable: true})"
    page.evaluate(f"({hide})('hidden')")
    page.clock.run_for(61_000)
    assert len(beats) == 1  # a tab in the background counts no time
    page.evaluate(f"({hide})('visible')")
    page.clock.run_for(31_000)
    page.wait_for_timeout(300)
    assert len(beats) == 2
    idle_from = len(beats)
    page.clock.run_for(240_000)  # visible, but nobody has touched anything for minutes
    page.wait_for_timeout(300)
    assert len(beats) - idle_from <= 1  # at most the beat due at the two-minute mark
    after_idle = len(beats)
    page.keyboard.press("j")  # back at work
    page.clock.run_for(31_000)
    page.wait_for_timeout(300)
    assert len(beats) == after_idle + 1
