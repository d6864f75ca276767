"""People and enrolment through the API: the accounts are the admins' (as the People page),
a project's members the researchers' (as its Members page); enrolling, quotas and withdrawing
call the page's form and services, so they are checked, audited and told as on the page."""

import pytest

from accounts.models import AccountOrigin, NotificationKind, Role, Track
from annotation.models import Notification, Project
from audit.models import AuditEvent
from tests.annotation.conftest import annotators, enrol
from tests.conftest import make_user
from tests.support.api import API

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    return response.json()


def test_only_admins_list_the_sites_people_with_their_flags_and_projects(
    client, researcher, admin_user
):
    (clinician,) = annotators(Track.CLINICAL, 1, project="Pilot")
    clinician.senior = True
    clinician.save(update_fields=["senior"])
    client.force_login(researcher)
    _problem(client.get(f"{API}/people"), 403)
    client.force_login(admin_user)
    rows = client.get(f"{API}/people", {"role": Role.ANNOTATOR}).json()["results"]
    (row,) = rows
    assert row["username"] == clinician.username and row["track"] == Track.CLINICAL
    assert (row["licensed"], row["senior"], row["active"]) == (True, True, True)
    assert row["origin"] == AccountOrigin.SITE
    assert [project["name"] for project in row["projects"]] == ["Pilot"]
    staff = client.get(f"{API}/people", {"role": Role.RESEARCHER}).json()["results"]
    assert [row["track"] for row in staff] == [None]
    _problem(client.get(f"{API}/people", {"role": "surgeon"}), 400)
    _problem(client.get(f"{API}/people", {"tarck": "clinical"}), 400)  # a misspelt filter
    detail = client.get(f"{API}/people/{clinician.pk}").json()
    assert [m["project"]["name"] for m in detail["memberships"]] == ["Pilot"]
    _problem(client.get(f"{API}/people/999999"), 404)


def test_a_researcher_enrols_annotators_with_a_quota_and_each_is_told(
    researcher_client, researcher
):
    project = Project.objects.create(name="Enrolment")
    first, second = annotators(Track.CLINICAL, 2, project=None)
    candidates = researcher_client.get(f"{API}/projects/{project.pk}/candidates").json()
    assert {first.pk, second.pk} <= {person["id"] for person in candidates}
    path = f"{API}/projects/{project.pk}/members"
    body = {"people": [first.pk, second.pk], "quota": 3}
    answer = researcher_client.post(path, body, content_type="application/json")
    assert answer.status_code == 201, answer.content
    members = answer.json()
    assert [(m["person"]["id"], m["quota"], m["enrolled"]) for m in members] == [
        (first.pk, 3, True),
        (second.pk, 3, True),
    ]
    assert all(m["enrolled_by"] == researcher.username for m in members)
    assert (
        AuditEvent.objects.filter(action="project.member_enrolled", actor=researcher).count() == 2
    )
    told = Notification.objects.filter(kind=NotificationKind.ENROLLED)
    assert set(told.values_list("recipient_id", flat=True)) == {first.pk, second.pk}
    # Enrolled now: no longer a candidate, so enrolling them again is refused, and nobody else is.
    (third,) = annotators(Track.CLINICAL, 1, prefix="third", project=None)
    again = {"people": [third.pk, first.pk]}
    refused = _problem(researcher_client.post(path, again, content_type="application/json"), 400)
    assert refused["errors"][0]["location"] == "body.people"
    assert not project.members.filter(annotator=third).exists()
    listed = researcher_client.get(path, {"enrolled": "true"}).json()["results"]
    assert len(listed) == 2


def test_a_quota_is_set_and_a_member_withdrawn_once(researcher_client, researcher):
    (person,) = annotators(Track.OPERATIONAL, 1, project=None)
    (member,) = enrol("Quotas", person)
    path = f"{API}/members/{member.pk}"
    assert researcher_client.put(path, {"quota": 5}, "application/json").json()["quota"] == 5
    _problem(researcher_client.put(path, {"quota": 0}, "application/json"), 400)
    assert researcher_client.put(path, {"quota": None}, "application/json").json()["quota"] is None
    withdrawn = researcher_client.delete(path)
    assert withdrawn.status_code == 200, withdrawn.content
    assert withdrawn.json()["released"] == 0 and withdrawn.json()["member"]["enrolled"] is False
    assert AuditEvent.objects.filter(action="project.member_withdrawn", actor=researcher).exists()
    again = _problem(researcher_client.delete(path), 409)
    assert "not enrolled any more" in again["detail"]
    withdrawn_list = researcher_client.get(
        f"{API}/projects/{member.project_id}/members", {"enrolled": "false"}
    )
    assert [row["id"] for row in withdrawn_list.json()["results"]] == [member.pk]


def test_projects_list_their_studies_and_how_many_are_enrolled(researcher_client):
    enrol("Counted", *annotators(Track.CLINICAL, 2, project=None))
    make_user("outsider", Role.ANNOTATOR, Track.CLINICAL)
    (row,) = researcher_client.get(f"{API}/projects").json()["results"]
    assert (row["name"], row["enrolled"], row["studies"]) == ("Counted", 2, [])
