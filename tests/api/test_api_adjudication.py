"""A study's adjudication through the API, the researcher's side: what qualifies and where it
stands, sending it (once, audited, the seniors told), the outcome once a senior clinician
decided on their page, and whether seniors see the jury. Senior clinicians are annotators:
the API refuses them."""

import pytest

from accounts.models import NotificationKind
from annotation.models import Notification
from annotation.services.adjudication import adjudication_record, adjudication_take_up
from audit.models import AuditEvent
from tests.annotation.conftest import (  # noqa: F401 - fixtures
    clinicians,
    scored_job,
    study,
    world,
    world_job,
)
from tests.annotation.test_adjudication import RUBRIC, disputed, scored, senior  # noqa: F401
from tests.support.api import API

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


def _send(client, target, item_id: int, rubric: str = RUBRIC):
    body = {"item": item_id, "rubric": rubric}
    return client.post(f"{API}/studies/{target.pk}/adjudications", body, "application/json")


def test_a_disagreement_is_listed_sent_once_and_decided(
    researcher_client,
    researcher,
    study,  # noqa: F811
    disputed,  # noqa: F811
    senior,  # noqa: F811
):
    state = researcher_client.get(f"{API}/studies/{study.pk}/adjudication").json()
    (row,) = [c for c in state["candidates"] if c["rubric"] == RUBRIC]
    assert (row["item"], row["state"], row["reason"]) == (disputed.pk, "not_sent", "clinicians")
    assert sorted(row["clinician_scores"]) == [1, 4] and row["gap"] == 3
    assert row["conversation"] == str(disputed.conversation.public_id)

    sent = _send(researcher_client, study, disputed.pk)
    assert sent.status_code == 201, sent.content
    assert (sent.json()["state"], sent.json()["sent_by"]) == ("waiting", researcher.username)
    assert AuditEvent.objects.get(action="adjudication.sent").actor == researcher
    told = Notification.objects.get(kind=NotificationKind.ADJUDICATION_WAITING)
    assert told.recipient == senior
    again = _send(researcher_client, study, disputed.pk)
    assert again.status_code == 409 and "already" in again.json()["detail"]
    assert again["Content-Type"].startswith(PROBLEM)

    listed = f"{API}/studies/{study.pk}/adjudications"
    (waiting,) = researcher_client.get(listed, {"state": "waiting"}).json()["results"]
    found = adjudication_take_up(study.items.get(pk=disputed.pk).adjudications.get(), senior)
    adjudication_record(found, adjudicator=senior, score=2, rationale="The red flag was missed.")
    assert researcher_client.get(listed, {"state": "waiting"}).json()["results"] == []
    (done,) = researcher_client.get(listed, {"state": "adjudicated"}).json()["results"]
    assert done["id"] == waiting["id"] and (done["score"], done["adjudicator"]) == (2, "senior-0")
    assert researcher_client.get(listed, {"state": "lost"}).status_code == 400
    (by_rubric,) = researcher_client.get(listed, {"rubric": RUBRIC}).json()["results"]
    assert by_rubric["id"] == done["id"]
    unknown = researcher_client.get(listed, {"rubric": "bedside_manner"})
    assert unknown.status_code == 400 and "bedside_manner" in unknown.json()["detail"]
    state = researcher_client.get(f"{API}/studies/{study.pk}/adjudication").json()
    (row,) = [c for c in state["candidates"] if c["rubric"] == RUBRIC]
    assert (row["state"], row["adjudication"]) == ("adjudicated", done["id"])


def test_an_item_that_does_not_qualify_is_refused_and_one_of_another_study_not_found(
    researcher_client,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    first = scored(study, clinicians[0], 3)
    scored(study, clinicians[1], 4)
    refused = _send(researcher_client, study, first.item_id)
    assert refused.status_code == 409 and "does not qualify" in refused.json()["detail"]
    assert _send(researcher_client, study, 999999).status_code == 404
    missing = _send(researcher_client, study, first.item_id, rubric="")
    assert missing.status_code == 400


def test_seniors_see_the_jury_only_when_the_researcher_says_so(
    researcher_client,
    researcher,
    study,  # noqa: F811
):
    path = f"{API}/studies/{study.pk}/adjudication/jury"
    answer = researcher_client.put(path, {"shows_jury": True}, "application/json")
    assert answer.status_code == 200 and answer.json()["shows_jury"] is True
    study.refresh_from_db()
    assert study.adjudication_shows_jury
    event = AuditEvent.objects.get(action="study.adjudication_jury_set")
    assert event.actor == researcher


def test_a_senior_clinician_never_reaches_these_routes(client, study, senior):  # noqa: F811
    client.force_login(senior)
    for path in ("adjudication", "adjudications"):
        refused = client.get(f"{API}/studies/{study.pk}/{path}")
        assert refused.status_code == 403
        assert "annotators cannot use it" in refused.json()["detail"]
