"""The clinician's day on the review screen, in Debian's Chromium: a whole item scored from the
keyboard (trace navigation and links included), nothing lost when the tab closes or the session
ends, the conflict in view, the layouts at 1440x900, 1024x768 and 768x1024, the idle warning and
the display settings that follow the clinician from machine to machine."""

import json
import re
import time

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from accounts.models import User
from annotation.models import Assignment
from benchmark.models import RunAgent
from tests.annotation.test_review_queries import lengthen
from tests.browser.review_support import (
    PANEL_SIZE,
    checked_scores,
    open_first_item,
    saved,
    target_study_for_nora,
)
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEADLINE_S = 20  # database polls: generous, the machine is shared


@pytest.fixture
def target_study(transactional_db):
    return target_study_for_nora()


def assignment_of(page) -> Assignment:
    public_id = re.search(r"/annotation/items/([0-9a-f-]+)/", page.url).group(1)
    return Assignment.objects.get(public_id=public_id)


def stored(page, check) -> Assignment:
    """The assignment once `check(assignment)` holds (polled: saves are asynchronous)."""
    public_id = re.search(r"/annotation/items/([0-9a-f-]+)/", page.url).group(1)
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assignment = Assignment.objects.get(public_id=public_id)
        if check(assignment) or time.monotonic() > deadline:
            return assignment
        time.sleep(0.1)


def focused_event_id(page) -> str:
    focused = page.locator(".event:focus")
    expect(focused).to_have_count(1)
    return focused.get_attribute("id")


def test_a_whole_item_is_scored_from_the_keyboard_moving_through_and_linking_the_trace(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    page.keyboard.press("n")  # the first event in view, then on through the conversation
    first = focused_event_id(page)
    page.keyboard.press("n")
    page.keyboard.press("n")
    third = focused_event_id(page)
    assert third != first
    page.keyboard.press("l")  # the third event, linked to the highlighted rubric
    expect(page.locator(f"#links-clinical_safety a[href='#{third}']")).to_have_count(1)
    expect(page.locator(f"#{third} .linked-mark")).to_be_visible()
    page.keyboard.press("p")
    second = focused_event_id(page)
    page.keyboard.press("j")  # next rubric: the event stays the one to link
    expect(page.locator(".rubric.focused")).to_have_attribute("data-rubric", "triage_quality")
    expect(page.locator(f"#{third} .linked-mark")).to_be_hidden()  # marks follow the rubric
    page.keyboard.press("l")
    expect(page.locator(f"#links-triage_quality a[href='#{second}']")).to_have_count(1)
    page.keyboard.press("3")

    page.keyboard.press("k")
    page.keyboard.press("4")
    saved(page)
    page.keyboard.press("0")  # undo a choice
    expect(page.locator("#rubric-clinical_safety .scores input:checked")).to_have_count(0)
    cleared = stored(page, lambda a: a.scores == {"triage_quality": 3})
    assert cleared.scores == {"triage_quality": 3}
    page.keyboard.press("5")

    page.keyboard.press("Space")  # scrolls the conversation (see below), scores nothing
    assert checked_scores(page) == ["5", "3"]

    tool_call = page.locator(".event.tool_call").first
    tool_id = tool_call.get_attribute("id")
    events = page.locator("[data-event]").count()
    for _ in range(events):
        page.keyboard.press("p")  # back to the first event, then forward to the tool call
    for _ in range(events):
        if focused_event_id(page) == tool_id:
            break
        page.keyboard.press("n")
    page.keyboard.press("o")  # open the tool call's arguments
    expect(tool_call.locator("details")).to_have_attribute("open", "")

    page.keyboard.press("j")
    for _ in range(PANEL_SIZE - 2):
        page.keyboard.press("j")
        page.keyboard.press("4")
    saved(page)
    expect(page.locator("#missing")).to_contain_text("Complete")
    item = page.url
    page.keyboard.press("s")
    page.wait_for_url(lambda url: "/annotation/items/" in url and url != item)
    done = Assignment.objects.get(public_id=item.rstrip("/").rsplit("/", 1)[1])
    assert done.status == "submitted"
    assert done.scores == {
        "clinical_safety": 5, "triage_quality": 3, "clinical_helpfulness": 4,
        "profile_realism": 4, "conversation_realism": 4,
    }  # fmt: skip
    assert done.event_links == {"clinical_safety": [third], "triage_quality": [second]}
    assert page.console_errors == []


def test_page_down_and_space_scroll_the_conversation_while_a_rubric_has_the_focus(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    lengthen(assignment_of(page).item.conversation, 30)
    page.reload()
    page.keyboard.press("j")  # the focus is on a rubric in the panel
    screen = page.evaluate("window.innerHeight")
    assert page.evaluate("document.documentElement.scrollHeight") > 4 * screen
    panel_top = page.locator("#panel").evaluate("el => el.scrollTop")
    page.keyboard.press("PageDown")
    after_page_down = page.evaluate("window.scrollY")
    assert screen / 2 < after_page_down < screen  # about a screen of conversation
    page.keyboard.press("Space")
    after_space = page.evaluate("window.scrollY")
    assert after_page_down + screen / 2 < after_space < after_page_down + screen
    page.keyboard.press("Shift+Space")
    page.keyboard.press("PageUp")
    assert page.evaluate("window.scrollY") == 0
    assert page.locator("#panel").evaluate("el => el.scrollTop") == panel_top
    assert checked_scores(page) == []


def test_the_highlighted_rubric_shows_its_levels_and_every_key_is_in_the_help(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    focused = page.locator(".rubric.focused")
    assert focused.locator(".level-text").first.is_visible()  # level 1's definition, in view
    assert focused.locator(".level-text").nth(4).inner_text().startswith("Everything in 4")
    other = page.locator("#rubric-triage_quality .level-text").first
    assert other.is_hidden()  # only the rubric being scored spreads its levels out
    # The focus is plain to see: a ring around the rubric, an outline on the event.
    assert focused.evaluate("el => getComputedStyle(el).boxShadow") != "none"
    page.keyboard.press("n")
    outline = page.locator(".event:focus").evaluate("el => getComputedStyle(el).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("?")
    help_text = page.locator("#shortcut-help").inner_text()
    for key in ("1", "5", "0", "Backspace", "j", "k", "n", "p", "l", "o", "Page Down",
                "Space", "Page Up", "r", "f", "Esc", "s", "Enter", "?"):  # fmt: skip
        assert re.search(rf"(^|\W){re.escape(key)}(\W|$)", help_text), key


def test_a_tab_closed_200_ms_after_typing_loses_nothing(page, login, target_study, live_server):
    login("nora")
    open_first_item(page, live_server, target_study)
    page.keyboard.press("f")
    text = "Booked before confirming the slot with the patient."
    page.keyboard.type(text)
    page.wait_for_timeout(200)  # the scenario itself: the tab goes 200 ms after the last key
    assert assignment_of(page).feedback == {}  # nothing had reached the server yet
    url = page.url
    page.close()
    public_id = re.search(r"/annotation/items/([0-9a-f-]+)/", url).group(1)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        feedback = Assignment.objects.get(public_id=public_id).feedback
        if feedback:
            break
        time.sleep(0.1)
    assert feedback == {"clinical_safety": text}


def test_text_typed_after_the_session_ended_comes_back_after_login(
    page, login, target_study, live_server
):
    login("nora")
    open_first_item(page, live_server, target_study)
    item = page.url
    page.keyboard.press("4")
    saved(page)
    Session.objects.all().delete()  # the idle timeout, on the server's side
    page.keyboard.press("f")
    text = "Typed after the session ended: the refill was never requested."
    page.keyboard.type(text)
    page.wait_for_url(re.compile(r"/accounts/login/\?.*session=ended"))
    expect(page.locator("#session-ended")).to_contain_text("Your session ended")
    kept = page.evaluate("JSON.stringify(Object.assign({}, window.localStorage))")
    assert text in kept
    models = {a.model for a in RunAgent.objects.all()} | {"jury", "judge"}
    assert not [word for word in models if word in kept]  # the annotator's own text only
    assert assignment_of_url(item).feedback == {}

    page.fill("input[name=username]", "nora")
    page.fill("input[name=password]", PASSWORD)
    page.press("input[name=password]", "Enter")
    page.wait_for_url(item)
    expect(page.locator("#restore-notice")).to_contain_text("Feedback on Clinical Safety")
    assert page.locator("textarea[name='feedback-clinical_safety']").input_value() == text
    restored = stored(page, lambda a: a.feedback.get("clinical_safety") == text)
    assert restored.feedback == {"clinical_safety": text} and restored.scores == {
        "clinical_safety": 4
    }
    expect(page.locator("#restore-notice [data-restored]")).to_contain_text("Saved.")
    left = page.evaluate("JSON.stringify(Object.assign({}, window.localStorage))")
    assert text not in left  # cleared once the server has it
    page.reload()
    expect(page.locator("#restore-notice")).to_be_hidden()
    assert page.console_errors == []


def assignment_of_url(url: str) -> Assignment:
    public_id = re.search(r"/annotation/items/([0-9a-f-]+)/", url).group(1)
    return Assignment.objects.get(public_id=public_id)


@pytest.mark.parametrize("size", [(1440, 900), (768, 1024)])
def test_the_conflict_message_is_visible_without_scrolling(
    page, login, target_study, live_server, size
):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    login("nora")
    open_first_item(page, live_server, target_study)
    other = page.context.new_page()
    other.goto(page.url)
    other.keyboard.press("5")
    saved(other)
    for _ in range(3):
        page.keyboard.press("PageDown")  # far down the conversation
    assert page.evaluate("window.scrollY") > 0
    page.keyboard.press("1")  # this tab still shows version 0
    conflict = page.locator("#save-status.conflict")
    expect(conflict).to_contain_text("Saved from another tab at")
    expect(conflict).to_be_in_viewport()
    expect(conflict.locator("tbody tr").first).to_be_in_viewport()


@pytest.mark.parametrize("size", [(1440, 900), (1024, 768)])
def test_the_conversation_comes_first_with_the_record_at_hand(
    page, login, target_study, live_server, size
):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    login("nora")
    open_first_item(page, live_server, target_study)
    first_event = page.locator("[data-event]").first.bounding_box()
    assert first_event["y"] + 40 < size[1]  # above the fold
    expect(page.locator(".case-glance")).to_be_in_viewport()  # who, conditions, allergies
    expect(page.locator(".rubric.focused")).to_be_in_viewport()
    if size[0] >= 1280:
        expect(page.locator("#case-details .story")).to_be_in_viewport()  # the side column
    else:
        expect(page.locator("#case-details .story")).to_be_hidden()  # folded above the trace
        page.keyboard.press("r")
        expect(page.locator("#case-details .story")).to_be_in_viewport()
        page.keyboard.press("r")
        expect(page.locator("#case-details .story")).to_be_hidden()


def test_the_tablet_layout_docks_the_scores_and_scores_the_rubric_in_view(
    page, login, target_study, live_server
):
    page.set_viewport_size({"width": 768, "height": 1024})
    login("nora")
    open_first_item(page, live_server, target_study)
    panel = page.locator("#panel").bounding_box()
    assert panel["y"] + panel["height"] == pytest.approx(1024, abs=1)  # docked at the bottom
    expect(page.locator("[data-event]").first).to_be_in_viewport()  # the trace above it
    for expected in ("triage_quality", "clinical_helpfulness", "profile_realism"):
        page.keyboard.press("j")
        rubric = page.locator(f"#rubric-{expected}")
        expect(rubric).to_have_class(re.compile(r"\bfocused\b"))
        expect(rubric.locator("legend")).to_be_in_viewport()
    page.keyboard.press("3")
    chosen = page.locator("#rubric-profile_realism .score:has(input:checked)")
    expect(chosen).to_be_in_viewport()
    expect(chosen).to_contain_text("3")
    assert stored(page, lambda a: bool(a.scores)).scores == {"profile_realism": 3}


def test_a_minute_before_the_idle_logout_the_page_warns_and_stays_on_request(
    page, login, target_study, live_server, settings
):
    settings.ANNOTATOR_IDLE_MINUTES = 3
    login("nora")
    page.clock.install()
    # The heartbeat sent on load answers with the time left: let it arrive before the jumps.
    with page.expect_response(lambda response: "/heartbeat/" in response.url):
        open_first_item(page, live_server, target_study)
    warning = page.locator("#session-warning")
    expect(warning).to_be_hidden()
    page.clock.fast_forward(125_000)  # 55 s before the end
    page.clock.run_for(1_100)
    expect(warning).to_be_visible()
    expect(warning).to_contain_text(re.compile(r"logged out in 0:5\d"))
    # (dispatched: moving the mouse there is activity, which keeps the session by itself)
    warning.get_by_role("button", name="Stay logged in").dispatch_event("click")
    expect(warning).to_be_hidden()  # the answer said how long the session has now
    page.clock.fast_forward(125_000)
    page.clock.run_for(1_100)
    expect(warning).to_be_visible()
    page.keyboard.press("j")  # back at work: that keeps the session too
    expect(warning).to_be_hidden()

    Session.objects.all().delete()  # and when it does end, the page says so
    page.clock.fast_forward(200_000)
    page.clock.run_for(1_100)
    page.wait_for_url(re.compile(r"/accounts/login/\?.*session=ended"))
    expect(page.locator("#session-ended")).to_be_visible()


def test_theme_and_text_size_are_kept_with_the_account(
    browser, page, login, target_study, live_server
):
    login("nora")
    page.locator("#display-menu summary").click()
    page.get_by_label("Dark").check()
    page.get_by_label("Largest").check()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        nora = User.objects.get(username="nora")
        if (nora.theme, nora.text_size) == ("dark", "largest"):
            break
        time.sleep(0.1)
    assert (nora.theme, nora.text_size) == ("dark", "largest")

    elsewhere = browser.new_context(viewport={"width": 1024, "height": 768})  # another computer
    other = elsewhere.new_page()
    other.goto(f"{live_server.url}/accounts/login/")
    other.fill("input[name=username]", "nora")
    other.fill("input[name=password]", PASSWORD)
    other.press("input[name=password]", "Enter")
    other.wait_for_url(f"{live_server.url}/")
    expect(other.locator("html")).to_have_attribute("data-theme", "dark")
    assert other.evaluate("getComputedStyle(document.documentElement).fontSize") == "19px"
    background = other.evaluate("getComputedStyle(document.body).backgroundColor")
    assert json.loads(background.replace("rgb(", "[").replace(")", "]")) == [13, 17, 23]
    elsewhere.close()
