"""Every state-changing staff action leaves who, when, what and the values before and after;
the admin lists, filters and exports the trail and cannot change it."""

import csv
import io
import json

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.urls import reverse

from accounts.models import Role, Track, User
from annotation.services import queue
from annotation.services.annotations import annotation_invalidate, annotation_submit
from annotation.services.studies import study_lock
from audit.models import AuditEvent
from jury.services.rubrics import current_versions, rubric_version_create
from tests.annotation.conftest import clinicians, new_study  # noqa: F401 - fixtures
from tests.annotation.test_annotation_writes import full_draft
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401
from tests.support.builders import enriched_set, launched_run

pytestmark = pytest.mark.django_db


def events(action: str, target=None):
    found = AuditEvent.objects.filter(action=action)
    return list(found.filter(object_id=str(target.pk)) if target is not None else found)


def test_run_launch_pause_cancel_and_resume_are_recorded_with_the_person(admin_client_, admin_user):
    run = launched_run(enriched_set(size=1), user=admin_user)
    for action in ("pause", "resume", "cancel"):
        admin_client_.post(reverse("benchmark:run_control", args=[run.pk, action]))
    assert [e.actor for e in events("run.launched", run)] == [admin_user]
    paused, resumed, cancelled = (
        events("run.paused"),
        events("run.resumed"),
        events("run.cancelled"),
    )
    assert (paused[0].before, paused[0].after) == ({"status": "running"}, {"status": "paused"})
    assert (resumed[0].before, resumed[0].after) == ({"status": "paused"}, {"status": "running"})
    assert cancelled[0].after == {"status": "cancelled"} and cancelled[0].actor == admin_user
    assert paused[0].object_id == str(run.pk) and paused[0].object_type == "benchmark.Run"


def test_study_creation_lock_and_invalidation_are_recorded(scored_job, clinicians, researcher):  # noqa: F811
    study = new_study(scored_job)
    assert events("study.created")[0].after["items"] == study.items.count()
    me = clinicians[0]
    assignment = queue.next_assignment(study=study, annotator=me)
    annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=me)
    annotation_invalidate(assignment, actor=researcher, reason="wrong item")
    study_lock(study, actor=researcher)
    invalidated = events("annotation.invalidated")[0]
    assert (invalidated.actor, invalidated.note) == (researcher, "wrong item")
    locked = events("study.locked")[0]
    assert (locked.before, locked.after) == ({"status": "open"}, {"status": "locked"})


def test_publishing_a_rubric_version_is_recorded(researcher):
    current = next(v for v in current_versions() if v.rubric_id == "clinical_safety")
    edited = current.yaml_text.replace("name: Clinical Safety", "name: Clinical Safety (v2)")
    published = rubric_version_create(
        rubric_id="clinical_safety", yaml_text=edited, user=researcher, note="clearer name"
    )
    event = events("rubric.version_published")[0]
    assert event.before["version"] == current.version
    assert event.after["version"] == published.version and event.actor == researcher


def test_a_role_or_track_change_in_the_admin_is_recorded(admin_user):
    person = User.objects.create_user("nurse", password="x" * 12, role=Role.ANNOTATOR,
                                      track=Track.CLINICAL)  # fmt: skip
    person.track = Track.OPERATIONAL
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    site._registry[User].save_model(request, person, form=None, change=True)
    event = events("person.role_changed")[0]
    assert event.before["track"] == "clinical" and event.after["track"] == "operational"
    assert event.actor == admin_user


def test_the_admin_lists_filters_and_exports_but_never_edits(admin_client_, admin_user):
    run = launched_run(enriched_set(size=1), user=admin_user)
    listing = admin_client_.get("/admin/audit/auditevent/?action=run.launched")
    assert listing.status_code == 200 and run.name.encode() in listing.content
    event = AuditEvent.objects.get(action="run.launched", object_id=str(run.pk))
    assert admin_client_.get("/admin/audit/auditevent/add/").status_code == 403
    assert admin_client_.post(f"/admin/audit/auditevent/{event.pk}/delete/").status_code == 403
    change = admin_client_.post(f"/admin/audit/auditevent/{event.pk}/change/", {"note": "x"})
    assert change.status_code == 403
    exported = admin_client_.post(
        "/admin/audit/auditevent/",
        {"action": "export_csv", "_selected_action": [event.pk]},
    )
    assert exported["Content-Type"].startswith("text/csv")
    assert b"run.launched" in exported.content and admin_user.username.encode() in exported.content
    row = next(csv.DictReader(io.StringIO(exported.content.decode())))
    assert json.loads(row["after"])["config"]["patient_model"] == "offline/patient"  # JSON
    AuditEvent.objects.get(pk=event.pk)  # still there


def test_launching_a_scoring_job_is_recorded(scored_job):  # noqa: F811
    event = AuditEvent.objects.get(action="scoring.launched", object_id=str(scored_job.pk))
    assert event.after["jury"] == scored_job.jury.name and event.after["conversations"] == "all"
