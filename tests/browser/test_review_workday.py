"""A clinician's working day on the review screen, keyboard only, in Debian's Chromium at the
sizes the clinicians used (1366x768, 1920x1080, a 768x1024 tablet) and at the largest text:
every rubric scored with Tab and the number keys, the comment box in view above the submit bar,
the focus where work goes on; a server that stops answering and comes back; two tabs that
change different fields; the idle logout on time; the help, the conflict and the columns that
fit the text size."""

import re
import time
from urllib.parse import parse_qs

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from accounts import middleware
from accounts.models import User
from annotation.models import Assignment
from tests.browser.review_support import (
    PANEL_SIZE,
    checked_scores,
    open_first_item,
    saved,
    target_study_for_nora,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEADLINE_S = 20  # database polls: generous, the machine is shared
COMMENT = "Safe overall; booked before confirming the time with him."  # 57 characters
SIZES = {"laptop": (1366, 768), "desktop": (1920, 1080), "tablet": (768, 1024)}

# How much of the overall comment box a person cannot see: under the submit bar, outside the
# scores panel's visible part or outside the window.
COMMENT_BOX = """() => {
  const box = document.querySelector("textarea[name=overall_comment]").getBoundingClientRect();
  const bar = document.querySelector(".submit-bar").getBoundingClientRect();
  const panel = document.getElementById("panel").getBoundingClientRect();
  const under = Math.max(0, Math.min(box.bottom, bar.bottom) - Math.max(box.top, bar.top));
  const top = Math.max(box.top, panel.top, 0);
  const bottom = Math.min(box.bottom, panel.bottom, window.innerHeight, bar.top);
  return {height: box.height, underBar: under, hidden: box.height - Math.max(0, bottom - top)};
}"""

FOCUSED = """() => {
  const element = document.activeElement;
  return {tag: element.tagName.toLowerCase(), name: element.name || "", id: element.id || "",
          rubric: element.closest(".rubric")?.dataset.rubric || "",
          scored: Boolean(element.closest(".rubric")?.querySelector(".scores input:checked"))};
}"""


@pytest.fixture
def target_study(transactional_db):
    return target_study_for_nora()


def stored(public_id, check) -> Assignment:
    """The assignment once `check(assignment)` holds (polled: saves are asynchronous)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assignment = Assignment.objects.get(public_id=public_id)
        if check(assignment) or time.monotonic() > deadline:
            return assignment
        time.sleep(0.1)


def item_id(page) -> str:
    return re.search(r"/annotation/items/([0-9a-f-]+)/", page.url).group(1)


def keyboard_pass(page) -> dict:
    """Tab through the item from where the page put the focus, score each rubric reached with a
    number key, type the comment and leave the focus there: what it took and what was seen."""
    tabs, seen = 0, {}
    while tabs < 12 * PANEL_SIZE:
        focused = page.evaluate(FOCUSED)
        if focused["name"] == "overall_comment":
            break
        if focused["rubric"] and not focused["scored"]:
            page.keyboard.press(str(1 + len(seen) % 5))
            seen[focused["rubric"]] = 1 + len(seen) % 5
        page.keyboard.press("Tab")
        tabs += 1
    before = page.evaluate(COMMENT_BOX)
    page.keyboard.type(COMMENT)
    return {"tabs": tabs, "scored": seen, "comment": before, "typed": page.evaluate(COMMENT_BOX)}


@pytest.mark.parametrize(
    ("size", "text_size"),
    [("laptop", "medium"), ("desktop", "medium"), ("tablet", "medium"), ("laptop", "largest")],
)
def test_a_keyboard_only_pass_scores_every_rubric_with_the_comment_box_in_view(
    page, login, target_study, live_server, size, text_size
):
    User.objects.filter(username="nora").update(text_size=text_size)
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    login("nora")
    open_first_item(page, live_server, target_study)
    first = item_id(page)
    # Opening the item put the focus on the first rubric to score, not on the page's body.
    assert page.evaluate(FOCUSED)["rubric"] == "clinical_safety"
    missing = page.locator("#missing")
    expect(missing).to_contain_text("Still to score (5)")
    assert missing.evaluate("e => e.scrollHeight <= e.clientHeight")  # nothing cut off
    expect(missing).to_contain_text("Conversation Realism")
    if size == "tablet":  # the scores dock takes a third of the screen at most
        assert page.locator("#panel").bounding_box()["height"] <= height / 3 + 1

    measured = keyboard_pass(page)
    print(f"\n{size} {width}x{height}, {text_size} text: {measured}")
    assert len(measured["scored"]) == PANEL_SIZE  # Tab reached every rubric
    assert measured["tabs"] <= 5 * PANEL_SIZE  # the rubric, its score, clear, levels, feedback
    assert measured["comment"]["underBar"] == 0 and measured["comment"]["hidden"] == 0
    assert measured["typed"]["underBar"] == 0 and measured["typed"]["hidden"] == 0
    if size == "tablet":  # the docked rubric shows what its chosen level means
        chosen = page.locator("#rubric-conversation_realism .level:has(input:checked)")
        expect(chosen.locator(".level-text")).to_be_visible()
    saved_item = stored(first, lambda a: a.overall_comment == COMMENT)
    assert saved_item.scores == measured["scored"]

    page.keyboard.press("Tab")  # from the comment, the submit button
    expect(page.locator("[data-key-submit]")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/annotation/items/" in url and first not in url)
    assert Assignment.objects.get(public_id=first).status == "submitted"
    # The next item opens with the focus where the work goes on.
    expect(page.locator("#rubric-clinical_safety")).to_be_focused()
    assert page.console_errors == []


@pytest.mark.parametrize("failure", ["network down", "server error", "server hangs"])
def test_changes_made_while_the_server_is_unreachable_are_kept_retried_and_saved(
    page, login, target_study, live_server, failure, settings
):
    settings.REVIEW_SAVE_TIMEOUT_SECONDS = 5  # a hanging save is given up after this
    settings.REVIEW_SAVE_RETRY_SECONDS = (1, 2)  # then sent again after 1 s, then every 2 s
    hanging, failing = [], []

    def refuse(route):
        if not failing:
            route.continue_()
        elif failure == "network down":
            route.abort("connectionrefused")
        elif failure == "server error":
            route.fulfill(status=503, body="Service unavailable")
        else:
            hanging.append(route)  # never answered: the page gives it up after 5 s

    # Routed from the start and switched by a flag: a route added mid-page could miss a save
    # sent in the same moment on a busy machine (it did once: the score went through).
    page.route("**/autosave/", refuse)
    login("nora")
    open_first_item(page, live_server, target_study)
    public_id = item_id(page)
    page.keyboard.press("4")
    status = page.locator("#save-status")
    # The server's answer to this score, not a "Saved" shown before it (a wait that keeps
    # Playwright's loop running: the route above answers only inside a Playwright call).
    expect(status).to_have_attribute("data-saved", re.compile(r'"score-clinical_safety": "4"'))
    failing.append(True)
    page.keyboard.press("j")
    page.keyboard.press("2")
    page.keyboard.press("f")
    typed = "Booked the slot without asking the patient when he is free."
    page.keyboard.type(typed)
    page.keyboard.press("Escape")
    expect(status).to_contain_text("Not saved: 2 changes waiting", timeout=DEADLINE_S * 2000)
    expect(status).to_contain_text("retrying")
    expect(status).not_to_contain_text("Saved")
    expect(page.locator("#announce")).to_contain_text("Not saved")
    page.keyboard.press("s")  # a submit now would end on an error page: it is held back
    page.wait_for_timeout(300)
    assert item_id(page) == public_id
    held = Assignment.objects.get(public_id=public_id)
    assert held.scores == {"clinical_safety": 4} and held.feedback == {}

    failing.clear()  # the server answers again: the next retry saves everything
    # A save already hanging is given up only after the page's 5 s, then retried after the
    # backoff's pause (2 s here).
    expect(status).to_contain_text(re.compile(r"Saved \d\d:\d\d:\d\d"), timeout=DEADLINE_S * 3000)
    expect(page.locator("#announce")).to_contain_text("Reached the server again")
    done = stored(public_id, lambda a: a.feedback.get("triage_quality") == typed)
    assert done.scores == {"clinical_safety": 4, "triage_quality": 2}
    assert done.feedback == {"triage_quality": typed}
    assert page.locator("textarea[name='feedback-triage_quality']").input_value() == typed
    assert page.evaluate("JSON.stringify(Object.assign({}, localStorage))").count(typed) == 0
    assert item_id(page) == public_id  # the submit held back was not carried out later


def test_two_tabs_that_change_different_fields_both_keep_their_work(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    public_id = item_id(page)
    other = page.context.new_page()
    other.goto(page.url)
    other.keyboard.press("5")  # the other tab scores the first rubric
    saved(other)
    page.keyboard.press("j")  # this tab, still at version 0, scores the second one
    page.keyboard.press("3")
    page.locator("textarea[name=overall_comment]").fill(COMMENT)
    page.locator("textarea[name=overall_comment]").blur()
    status = page.locator("#save-status")
    expect(status).to_contain_text("with what another tab saved")
    expect(page.locator("#save-status.conflict")).to_have_count(0)
    merged = stored(public_id, lambda a: a.overall_comment == COMMENT)
    assert merged.scores == {"clinical_safety": 5, "triage_quality": 3}
    assert checked_scores(page) == ["5", "3"]  # the other tab's score shows here too

    other.keyboard.press("f")  # the other tab, now stale, writes the first rubric's feedback
    other.keyboard.type("Checked the record first.")
    other.keyboard.press("Escape")
    expect(other.locator("#save-status")).to_contain_text("with what another tab saved")
    assert other.locator("textarea[name=overall_comment]").input_value() == COMMENT
    both = stored(public_id, lambda a: bool(a.feedback))
    assert both.feedback == {"clinical_safety": "Checked the record first."}
    assert both.scores == {"clinical_safety": 5, "triage_quality": 3}

    other.keyboard.press("j")  # the other tab changes the second rubric's score ...
    other.keyboard.press("4")
    stored(public_id, lambda a: a.scores["triage_quality"] == 4)
    page.keyboard.press("1")  # ... and so does this one: the same field, shown, not merged
    conflict = page.locator("#save-status.conflict")
    expect(conflict).to_contain_text("on the same field you changed")
    expect(conflict.locator("tbody tr")).to_have_count(1)
    assert Assignment.objects.get(public_id=public_id).scores["triage_quality"] == 4


def test_the_conflict_shows_every_column_in_full_at_1366_px(page, login, target_study, live_server):
    page.set_viewport_size({"width": 1366, "height": 768})
    login("nora")
    open_first_item(page, live_server, target_study)
    other = page.context.new_page()
    other.goto(page.url)
    theirs = "Booked before checking he could attend at that time; the record shows shifts. " * 2
    other.locator("textarea[name='feedback-clinical_safety']").fill(theirs.strip())
    other.locator("textarea[name='feedback-clinical_safety']").blur()
    saved(other)
    page.locator("textarea[name='feedback-clinical_safety']").fill("Mine differs. " * 12)
    page.locator("textarea[name='feedback-clinical_safety']").blur()
    conflict = page.locator("#save-status.conflict")
    expect(conflict).to_be_visible()
    banner = conflict.bounding_box()
    for cell in conflict.locator("th, td").all():
        box = cell.bounding_box()
        assert banner["x"] <= box["x"] and box["x"] + box["width"] <= banner["x"] + banner["width"]
    assert conflict.evaluate("e => e.scrollWidth <= e.clientWidth")
    saved_cell = conflict.locator("tbody td").nth(2)
    expect(saved_cell).to_be_in_viewport()
    assert saved_cell.inner_text().strip() == theirs.strip()


@pytest.mark.parametrize("size", ["laptop", "desktop"])
def test_at_the_largest_text_the_conversation_is_the_widest_column(
    page, login, target_study, live_server, size
):
    User.objects.filter(username="nora").update(text_size="largest")
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    login("nora")
    open_first_item(page, live_server, target_study)
    trace = page.locator("#trace").bounding_box()
    panel = page.locator("#panel").bounding_box()
    case = page.locator("#case").bounding_box()
    assert trace["width"] > panel["width"]
    if case["x"] + case["width"] <= trace["x"]:  # the record beside the conversation
        assert trace["width"] > case["width"]
    expect(page.locator("[data-event]").first).to_be_in_viewport()


def test_the_keys_help_scrolls_from_the_keyboard_at_the_largest_text(
    page, login, target_study, live_server
):
    User.objects.filter(username="nora").update(text_size="largest")
    page.set_viewport_size({"width": 1366, "height": 768})
    login("nora")
    open_first_item(page, live_server, target_study)
    help_box = page.locator("#shortcut-help")
    page.keyboard.press("?")
    expect(help_box).to_be_focused()
    assert help_box.evaluate("e => e.scrollHeight > e.clientHeight")  # it scrolls
    page.keyboard.press("PageDown")  # ... with the keyboard (it may scroll smoothly)
    page.wait_for_function("() => document.getElementById('shortcut-help').scrollTop > 0")
    page.keyboard.press("Tab")
    expect(help_box.get_by_role("button", name=re.compile("^Close"))).to_be_focused()
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    expect(page.locator("#rubric-clinical_safety")).to_be_focused()  # back where it was
    assert checked_scores(page) == []  # no key scored while the help was open


class ServerClock:
    """The server's clock in the idle rule (accounts.middleware), moved on with the page's fake
    clock: minutes pass in both without waiting them."""

    def __init__(self):
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset


def test_the_idle_logout_comes_on_time_whatever_the_page_sends_by_itself(
    page, login, target_study, live_server, settings, monkeypatch
):
    """The heartbeat says how long ago the person last acted; the server keeps the session only
    as of then. So the warning a minute before the end is not taken back by the page's own
    requests, and the logout comes three minutes after the last key, not later."""
    settings.ANNOTATOR_IDLE_MINUTES = 3
    clock = ServerClock()
    monkeypatch.setattr(middleware, "time", clock)
    login("nora")
    page.clock.install()
    with page.expect_response(lambda response: "/heartbeat/" in response.url):
        open_first_item(page, live_server, target_study)
    warning = page.locator("#session-warning")
    beats = []
    page.on("response", lambda r: "/heartbeat/" in r.url and beats.append(r))

    def wait(seconds: int) -> None:
        for _ in range(seconds // 10):  # both clocks together, a beat seen at its time
            clock.offset += 10
            page.clock.run_for(10_000)
            page.wait_for_timeout(50)

    wait(120)  # two minutes without a key; the page beats meanwhile (for time on task)
    assert len(beats) >= 3
    assert int(beats[-1].request.headers["x-idle-seconds"]) >= 89
    assert int(beats[-1].headers["x-session-expires-in"]) <= 91  # the end did not move
    page.clock.run_for(1_000)
    expect(warning).to_be_visible()  # a minute before the end, and it stays
    expect(warning).to_contain_text(re.compile(r"logged out in 0:5\d"))

    page.keyboard.press("j")  # a person's key keeps the session: three minutes from now
    expect(warning).to_be_hidden()
    wait(150)
    expect(warning).to_be_visible()
    wait(40)  # past the end: the page reloads into the login, which says why
    page.wait_for_url(re.compile(r"/accounts/login/\?.*session=idle"))
    expect(page.locator("#session-ended")).to_contain_text("without activity")


def test_a_session_ended_on_the_server_is_not_reported_as_inactivity(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    item = page.url
    # Off the page first: its own heartbeat, answered with the login redirect in the same
    # moment as the reload, would take the one-time "ended" mark (it did once under load).
    page.goto("about:blank")
    Session.objects.all().delete()  # logged out elsewhere, or ended by an administrator
    page.goto(item)
    page.wait_for_url(re.compile(r"/accounts/login/\?.*session=ended"))
    ended = page.locator("#session-ended")
    expect(ended).to_contain_text("Your session ended before its time")
    expect(ended).not_to_contain_text("without activity")


def test_enter_on_submit_while_a_save_is_answered_submits_once_the_answer_is_in(
    page, login, target_study, live_server
):
    held = []  # the whole comment's save: it reached the server, its answer waits here

    def hold_the_comments_answer(route):
        sent = parse_qs(route.request.post_data or "")
        if sent.get("overall_comment") != [COMMENT]:
            route.continue_()
            return
        held.append((route, route.fetch()))

    page.route("**/autosave/", hold_the_comments_answer)
    login("nora")
    open_first_item(page, live_server, target_study)
    first = item_id(page)
    measured = keyboard_pass(page)
    assert len(measured["scored"]) == PANEL_SIZE
    deadline = time.monotonic() + DEADLINE_S
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # a Playwright call: the route handler runs inside one
    assert held, "the comment was never sent"
    assert Assignment.objects.get(public_id=first).overall_comment == COMMENT

    submits = []
    page.on("request", lambda request: "/submit/" in request.url and submits.append(request))
    page.keyboard.press("Tab")
    expect(page.locator("[data-key-submit]")).to_be_focused()
    page.keyboard.press("Enter")  # the page still shows the version before the comment's save
    page.keyboard.press("Enter")  # impatient: still one submit
    page.wait_for_timeout(500)
    assert item_id(page) == first and "/submit/" not in page.url  # held back, not refused
    assert submits == []

    route, response = held.pop()
    route.fulfill(response=response)
    page.wait_for_url(lambda url: "/annotation/items/" in url and first not in url)
    submitted = Assignment.objects.get(public_id=first)
    assert submitted.status == "submitted" and submitted.overall_comment == COMMENT
    assert len(submits) == 1
    assert page.console_errors == []
