"""Moving a study's work through the API: the same services as the study and assignment pages,
so each move keeps the draft and its history and is audited; input that cannot be used is a
400 naming the field, a move the work's state refuses a 409 saying why."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Track
from annotation.models import AssignmentStatus, HistoryKind
from annotation.services.studies import study_lock
from audit.models import AuditEvent
from tests.annotation.conftest import (  # noqa: F401 - fixtures
    annotators,
    clinicians,
    scored_job,
    study,
    world,
    world_job,
)
from tests.annotation.test_moves import drafted, submitted
from tests.support.api import API

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


def _post(client, path: str, body: dict):
    return client.post(f"{API}{path}", body, content_type="application/json")


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    return response.json()


def test_a_draft_is_reassigned_extended_and_released_as_on_the_page(
    researcher_client,
    researcher,
    study,  # noqa: F811
    clinicians,  # noqa: F811
):
    giver, taker = clinicians[:2]
    draft = drafted(study, giver)
    path = f"/assignments/{draft.public_id}"
    shown = researcher_client.get(f"{API}{path}").json()
    offered = {move: why for move, why in shown["moves"].items() if not why}
    assert set(offered) == {"release", "extend", "reassign"}
    assert shown["moves"]["reopen"] == "Only submitted work can be reopened."
    assert taker.pk in [person["id"] for person in shown["receivers"]]

    moved = _post(researcher_client, f"{path}/reassign", {"to": taker.pk})
    assert moved.status_code == 200, moved.content
    assert moved.json()["annotator"] == {"id": taker.pk, "username": taker.username}
    draft.refresh_from_db()
    assert draft.scores == {"clinical_safety": 2}  # the draft went with it
    assert draft.history.filter(kind=HistoryKind.REASSIGN, actor=researcher).exists()
    assert AuditEvent.objects.get(action="assignment.reassigned").actor == researcher

    before = draft.reserved_until
    extended = _post(researcher_client, f"{path}/extend", {"hours": 4})
    assert extended.status_code == 200
    draft.refresh_from_db()
    assert draft.reserved_until >= before + timedelta(hours=4) - timedelta(seconds=5)
    refused = _problem(_post(researcher_client, f"{path}/extend", {"hours": 5}), 400)
    assert refused["errors"][0]["location"] == "body.hours"

    released = _post(researcher_client, f"{path}/release", {"note": "on leave"})
    assert released.json()["status"] == AssignmentStatus.RELEASED
    again = _problem(_post(researcher_client, f"{path}/release", {}), 409)
    assert "Only an item in progress" in again["detail"]


def test_a_receiver_the_rules_refuse_is_a_400_saying_why(researcher_client, study, clinicians):  # noqa: F811
    draft = drafted(study, clinicians[0])
    (operator,) = annotators(Track.OPERATIONAL, 1)
    path = f"/assignments/{draft.public_id}/reassign"
    body = _problem(_post(researcher_client, path, {"to": operator.pk}), 400)
    assert "operational track" in body["detail"]
    assert body["errors"] == [{"location": "body.to", "message": body["detail"]}]
    assert "no account" in _problem(_post(researcher_client, path, {"to": 999999}), 400)["detail"]
    study_lock(study)
    locked = _problem(_post(researcher_client, path, {"to": clinicians[1].pk}), 409)
    assert locked["detail"] == "The study is locked; nothing in it moves."


def test_submitted_work_stays_and_is_sent_back_with_a_note(researcher_client, study, clinicians):  # noqa: F811
    done = submitted(study, clinicians[0])
    path = f"/assignments/{done.public_id}"
    stays = _problem(_post(researcher_client, f"{path}/reassign", {"to": clinicians[1].pk}), 409)
    assert "Submitted work stays" in stays["detail"]
    no_note = _problem(_post(researcher_client, f"{path}/reopen", {"note": " "}), 400)
    assert no_note["errors"][0]["location"] == "body.note"
    reopened = _post(researcher_client, f"{path}/reopen", {"note": "Look at the dosage again."})
    assert reopened.status_code == 200, reopened.content
    assert reopened.json()["status"] == AssignmentStatus.RESERVED
    assert AuditEvent.objects.filter(action="assignment.reopened").exists()


def test_all_open_items_of_an_annotator_go_to_another(researcher_client, study, clinicians):  # noqa: F811
    giver, taker = clinicians[:2]
    draft = drafted(study, giver)
    path = f"/studies/{study.pk}/annotators/{giver.pk}/reassign"
    answer = _post(researcher_client, path, {"to": taker.pk})
    assert answer.status_code == 200, answer.content
    assert [row["public_id"] for row in answer.json()["moved"]] == [str(draft.public_id)]
    assert answer.json()["kept"] == []
    mine = researcher_client.get(f"{API}/studies/{study.pk}/assignments", {"annotator": taker.pk})
    assert [row["public_id"] for row in mine.json()["results"]] == [str(draft.public_id)]
    _problem(researcher_client.get(f"{API}/studies/{study.pk}/assignments", {"status": "x"}), 400)


def test_the_deadline_is_set_cleared_and_refused_in_the_past_or_once_locked(
    researcher_client,
    study,  # noqa: F811
):
    path = f"{API}/studies/{study.pk}/deadline"
    soon = timezone.now() + timedelta(days=5)
    answer = researcher_client.put(path, {"deadline": soon.isoformat()}, "application/json")
    assert answer.status_code == 200, answer.content
    study.refresh_from_db()
    assert abs(study.deadline - soon) < timedelta(minutes=1)
    past = (timezone.now() - timedelta(days=1)).isoformat()
    refused = _problem(researcher_client.put(path, {"deadline": past}, "application/json"), 400)
    assert refused["errors"][0]["location"] == "body.deadline"
    cleared = researcher_client.put(path, {"deadline": None}, "application/json")
    assert cleared.json()["deadline"] is None
    study_lock(study)
    _problem(researcher_client.put(path, {"deadline": soon.isoformat()}, "application/json"), 409)
