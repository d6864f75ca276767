"""Sessions end after inactivity (annotators sooner than staff); an autosave arriving
afterwards sends the browser to the login page and back, and the work saved before the expiry
is still there."""

from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from django.utils import timezone

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
    assert client.session.get_expiry_age() == 20 * 60


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_a_staff_session_expires_after_the_staff_idle_time(client, role, request, settings):
    assert settings.STAFF_IDLE_MINUTES == 120 > settings.ANNOTATOR_IDLE_MINUTES
    client.force_login(request.getfixturevalue(role))
    client.get("/")
    assert client.session.get_expiry_age() == 120 * 60
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
    session["idle_refreshed_at"] -= 45  # the expiry was last set 45 s ago (saved once a minute)
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
