"""Annotator sessions end after inactivity; an autosave arriving afterwards sends the browser
to the login page and back, and the work saved before the expiry is still there."""

import pytest
from django.urls import reverse

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


def test_staff_sessions_keep_the_default_lifetime(client, researcher, settings):
    client.force_login(researcher)
    client.get("/")
    assert client.session.get_expiry_age() == settings.SESSION_COOKIE_AGE


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
