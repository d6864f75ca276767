"""Sessions end after inactivity (annotators sooner than staff), counted from the person's last
action: the review screen's heartbeat keeps a session only as of the last key or click it
reports. An autosave arriving afterwards sends the browser to the login page and back, and the
work saved before the expiry is still there; the login page tells an idle end from a session
ended on the server."""

import time
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

from accounts import middleware
from accounts.middleware import SECONDS_LEFT_HEADER
from annotation.services import queue
from annotation.services.annotations import Draft, annotation_autosave
from tests.annotation.conftest import (
    clinicians,  # noqa: F401
    study,  # noqa: F401 - fixtures
)
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


def test_an_annotator_session_expires_after_the_idle_time(client, annotator, settings):
    settings.ANNOTATOR_IDLE_MINUTES = 20
    client.force_login(annotator)
    client.get("/")
    assert client.session.get_expiry_age() == pytest.approx(20 * 60, abs=2)


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_a_staff_session_expires_after_the_staff_idle_time(client, role, request, settings):
    assert settings.STAFF_IDLE_MINUTES == 120 > settings.ANNOTATOR_IDLE_MINUTES
    client.force_login(request.getfixturevalue(role))
    client.get("/")
    assert client.session.get_expiry_age() == pytest.approx(120 * 60, abs=2)
    stored = Session.objects.get(session_key=client.session.session_key).expire_date
    assert abs(stored - (timezone.now() + timedelta(minutes=120))) < timedelta(minutes=1)


def test_an_idle_staff_session_is_over_and_leads_to_login(client, researcher):
    client.force_login(researcher)
    client.get("/")
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    response = client.get(reverse("benchmark:runs"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_polling_within_a_minute_does_not_rewrite_the_session(client, researcher):
    client.force_login(researcher)
    client.get("/")
    marker = timezone.now() + timedelta(minutes=100)
    Session.objects.update(expire_date=marker)
    for _ in range(3):
        assert client.get("/", HTTP_HX_REQUEST="true").status_code == 200
    assert Session.objects.get().expire_date == marker


def test_an_autosave_after_expiry_leads_to_login_and_back_with_the_draft_kept(
    client,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    me = clinicians[0]
    assignment = queue.next_assignment(study=study, annotator=me)
    annotation_autosave(assignment, draft=Draft(scores={"clinical_safety": 2}), version=0, actor=me)
    review = reverse("annotation:review", args=[assignment.public_id])
    # The session has ended: no login on this client.
    response = client.post(
        reverse("annotation:autosave", args=[assignment.public_id]),
        {"version": 1, "score-clinical_safety": "3"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{review}",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next={review.replace('/', '%2F')}"
    client.force_login(me)
    page = client.get(review)
    assert page.status_code == 200
    assert assignment.history.count() == 0  # nothing was written while logged out
    assignment.refresh_from_db()
    assert assignment.scores == {"clinical_safety": 2}


def test_every_answer_to_a_logged_in_request_says_how_long_the_session_has_left(
    client, annotator, settings
):
    settings.ANNOTATOR_IDLE_MINUTES = 20
    client.force_login(annotator)
    first = client.get("/")
    assert int(first[SECONDS_LEFT_HEADER]) == pytest.approx(20 * 60, abs=2)
    session = client.session
    session["idle_acted_at"] -= 45  # the last action was 45 s ago (kept to the minute)
    session["idle_deadline"] -= 45
    session.save()
    later = client.get("/", HTTP_HX_REQUEST="true")
    assert int(later[SECONDS_LEFT_HEADER]) == pytest.approx(20 * 60 - 45, abs=2)
    client.logout()
    assert SECONDS_LEFT_HEADER not in client.get(reverse("login"))


def test_a_page_opened_after_the_session_ended_leads_to_a_login_page_that_says_so(
    client, researcher
):
    client.force_login(researcher)
    client.get("/")
    Session.objects.all().delete()  # the browser still sends the cookie of the ended session
    response = client.get(reverse("benchmark:runs"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/benchmark/runs/&session=ended"
    page = client.get(response["Location"]).content.decode()
    assert "Your session ended" in page and "kept in this browser" in page


def test_an_autosave_after_the_session_ended_sends_the_page_to_that_login_page(
    client,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    me = clinicians[0]
    assignment = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    review = reverse("annotation:review", args=[assignment.public_id])
    client.get(review)
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    response = client.post(
        reverse("annotation:autosave", args=[assignment.public_id]),
        {"version": 0, "feedback-clinical_safety": "typed after the end"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{review}",
    )
    assert response["HX-Redirect"] == (
        f"/accounts/login/?next={review.replace('/', '%2F')}&session=ended"
    )
    assignment.refresh_from_db()
    assert assignment.feedback == {}


def test_a_visitor_without_a_session_is_not_told_it_ended(client):
    response = client.get(reverse("benchmark:runs"))
    assert response["Location"] == f"{reverse('login')}?next=/benchmark/runs/"
    assert "Your session ended" not in client.get(response["Location"]).content.decode()
    assert client.get(f"{reverse('login')}?session=over").status_code == 400


class ServerClock:
    """The idle rule's clock (accounts.middleware), moved on by the test."""

    def __init__(self):
        self.offset = 0.0

    def time(self) -> float:
        return time.time() + self.offset


@pytest.fixture
def server_clock(monkeypatch):
    clock = ServerClock()
    monkeypatch.setattr(middleware, "time", clock)
    return clock


@pytest.fixture
def open_item(
    client,
    study,  # noqa: F811
    clinicians,  # noqa: F811
    settings,
):
    """A clinician on the review screen of an item, ANNOTATOR_IDLE_MINUTES = 30."""
    settings.ANNOTATOR_IDLE_MINUTES = 30
    me = clinicians[0]
    assignment = queue.next_assignment(study=study, annotator=me)
    client.force_login(me)
    client.get(reverse("annotation:review", args=[assignment.public_id]))
    return assignment


def heartbeat(client, assignment, **headers):
    url = reverse("annotation:heartbeat", args=[assignment.public_id])
    review = reverse("annotation:review", args=[assignment.public_id])
    return client.post(
        url, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=f"http://testserver{review}", **headers
    )


def test_the_heartbeat_keeps_the_session_only_as_of_the_persons_last_action(
    client, open_item, server_clock
):
    server_clock.offset = 20 * 60  # twenty minutes later, the page still beating
    beat = heartbeat(client, open_item, HTTP_X_IDLE_SECONDS=str(20 * 60))
    assert beat.status_code == 204
    assert int(beat[SECONDS_LEFT_HEADER]) == pytest.approx(10 * 60, abs=2)
    silent = heartbeat(client, open_item)  # a beat that says nothing of the person: nothing
    assert int(silent[SECONDS_LEFT_HEADER]) == pytest.approx(10 * 60, abs=2)
    acted = heartbeat(client, open_item, HTTP_X_IDLE_SECONDS="5")  # they pressed a key
    assert int(acted[SECONDS_LEFT_HEADER]) == pytest.approx(30 * 60 - 5, abs=2)
    server_clock.offset += 2 * 60
    save = client.post(
        reverse("annotation:autosave", args=[open_item.public_id]),
        {"version": 0, "score-clinical_safety": "3"},
        HTTP_HX_REQUEST="true",
    )  # a save is the person's own doing
    assert save.status_code == 200
    assert int(save[SECONDS_LEFT_HEADER]) == pytest.approx(30 * 60, abs=2)


def test_an_idle_session_ends_on_time_though_the_page_beats_and_says_why(
    client, open_item, server_clock
):
    for minute in range(1, 31):  # a beat every minute, the person away since the page opened
        server_clock.offset = minute * 60
        answer = heartbeat(client, open_item, HTTP_X_IDLE_SECONDS=str(minute * 60))
    assert answer.status_code == 200  # at minute 30 the session is over
    review = reverse("annotation:review", args=[open_item.public_id])
    assert answer["HX-Redirect"] == (
        f"/accounts/login/?next={review.replace('/', '%2F')}&session=idle"
    )
    page = client.get(answer["HX-Redirect"]).content.decode()
    assert "Your session ended</strong> after a while without activity" in page
    assert client.get(review).status_code == 302  # logged out for good


def test_a_session_deleted_on_the_server_is_not_called_inactivity(client, open_item):
    Session.objects.all().delete()
    review = reverse("annotation:review", args=[open_item.public_id])
    response = client.get(review)
    assert response["Location"].endswith("session=ended")
    page = client.get(response["Location"]).content.decode()
    assert "before its time" in page and "without activity" not in page


def test_logging_out_forgets_when_the_session_would_have_ended(client, open_item, server_clock):
    assert client.cookies[middleware.DEADLINE_COOKIE].value
    client.post(reverse("logout"))
    assert client.cookies[middleware.DEADLINE_COOKIE].value == ""
    server_clock.offset = 3600  # long after: a visit is not told its session idled out
    response = client.get(reverse("annotation:review", args=[open_item.public_id]))
    assert "session=" not in response["Location"]


def test_a_staff_page_polling_by_itself_does_not_keep_its_session(client, researcher, server_clock):
    """A live-job page polls every two seconds; its polls carry X-Sent-By-Page
    (static/js/session.js) and leave the idle end where the person's last click put it."""
    client.force_login(researcher)
    client.get(reverse("benchmark:runs"))
    staff_seconds = 120 * 60
    server_clock.offset = 90 * 60  # an hour and a half of polling, nobody at the screen
    poll = client.get(reverse("benchmark:runs"), HTTP_HX_REQUEST="true", HTTP_X_SENT_BY_PAGE="1")
    assert int(poll[SECONDS_LEFT_HEADER]) == pytest.approx(staff_seconds - 90 * 60, abs=2)
    server_clock.offset = staff_seconds + 1
    over = client.get(reverse("benchmark:runs"), HTTP_HX_REQUEST="true", HTTP_X_SENT_BY_PAGE="1")
    assert over.status_code == 200 and "session=idle" in over["HX-Redirect"]


def test_a_click_on_a_staff_page_keeps_its_session(client, researcher, server_clock):
    client.force_login(researcher)
    client.get(reverse("benchmark:runs"))
    server_clock.offset = 90 * 60
    click = client.get(reverse("benchmark:runs"), HTTP_HX_REQUEST="true")
    assert int(click[SECONDS_LEFT_HEADER]) == pytest.approx(120 * 60, abs=2)
