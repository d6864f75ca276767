"""Enrolment: a study is seen only by the annotators enrolled in its project - its queue, its
"next item" and every item URL answer 404 to anyone else - and a quota caps how many items
each is served. Through the services and the pages."""

from importlib import import_module

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.urls import reverse

from accounts.models import AccountOrigin, NotificationKind, Role, Track
from annotation.models import Assignment, AssignmentStatus, Notification, ProjectMember
from annotation.services import queue
from annotation.services.enrolment import member_enrol, member_withdraw
from annotation.services.worklist import annotator_studies
from audit.models import AuditEvent
from tests.annotation.conftest import annotators, enrol
from tests.annotation.test_annotation_writes import full_draft
from tests.conftest import make_user
from tests.foundation.test_people_page import record
from tests.support.text import squashed

pytestmark = pytest.mark.django_db


@pytest.fixture
def outsider(db):
    return make_user("outsider", Role.ANNOTATOR, Track.CLINICAL)  # enrolled nowhere


def submit(assignment):
    from annotation.services.annotations import annotation_submit

    return annotation_submit(
        assignment, draft=full_draft(assignment), version=assignment.version,
        actor=assignment.annotator,
    )  # fmt: skip


def test_a_study_is_hidden_from_annotators_outside_its_project(client, study, outsider):
    with pytest.raises(queue.StudyClosed, match="not enrolled"):
        queue.next_assignment(study=study, annotator=outsider)
    assert annotator_studies(outsider) == []
    client.force_login(outsider)
    assert client.get(reverse("annotation:queue", args=[study.pk])).status_code == 404
    assert client.post(reverse("annotation:next", args=[study.pk])).status_code == 404
    assert str(study.name) not in client.get(reverse("home")).content.decode()


def test_an_item_url_answers_404_once_its_annotator_is_withdrawn(client, study, clinicians):
    me = clinicians[0]
    held = queue.next_assignment(study=study, annotator=me)
    done = submit(queue.next_assignment(study=study, annotator=clinicians[1]))
    client.force_login(me)
    url = reverse("annotation:review", args=[held.public_id])
    assert client.get(url).status_code == 200
    member = ProjectMember.objects.get(project=study.project, annotator=me)
    assert member_withdraw(member, actor=None) == 1
    for name in ("review", "autosave", "submit", "skip", "reopen", "heartbeat"):
        response = client.post(reverse(f"annotation:{name}", args=[held.public_id]))
        assert response.status_code == 404, name
    assert client.get(url).status_code == 404
    held.refresh_from_db()
    assert held.status == AssignmentStatus.RELEASED and held.slot is None  # the seat is back
    done.refresh_from_db()
    assert done.status == AssignmentStatus.SUBMITTED  # others' work is untouched


def test_withdrawn_work_that_was_submitted_still_counts(study, clinicians):
    me = clinicians[0]
    submitted = submit(queue.next_assignment(study=study, annotator=me))
    member_withdraw(ProjectMember.objects.get(annotator=me), actor=None)
    assert Assignment.objects.counted().filter(pk=submitted.pk).exists()


def test_the_quota_stops_new_items_but_skipped_ones_still_come_back(study, clinicians):
    me = clinicians[0]
    member = ProjectMember.objects.get(annotator=me)
    member.quota = 2
    member.save()
    first = submit(queue.next_assignment(study=study, annotator=me))
    second = queue.next_assignment(study=study, annotator=me)
    queue.assignment_skip(second, reason="later", actor=me)
    back = queue.next_assignment(study=study, annotator=me)
    assert back.pk == second.pk  # no third item: the skipped one comes back
    submit(back)
    assert queue.next_assignment(study=study, annotator=me) is None
    progress = queue.queue_progress(study, me)
    assert (progress["done"], progress["total"], progress["open"]) == (2, 2, 0)
    assert first.pk != back.pk


def test_the_queue_page_says_the_quota_is_done(client, study, clinicians):
    me = clinicians[0]
    ProjectMember.objects.filter(annotator=me).update(quota=1)
    submit(queue.next_assignment(study=study, annotator=me))
    client.force_login(me)
    html = squashed(client.get(reverse("annotation:queue", args=[study.pk])))
    assert "You scored your 1 items of this study" in html


def test_enrolment_is_audited_and_tells_the_annotator_once(study, outsider, researcher):
    member = member_enrol(project=study.project, annotator=outsider, quota=5, actor=researcher)
    event = AuditEvent.objects.get(action="project.member_enrolled")
    assert event.actor == researcher and event.after["quota"] == 5
    (notice,) = Notification.objects.filter(recipient=outsider)
    assert notice.kind == NotificationKind.ENROLLED and notice.key == f"audit:{event.pk}"
    with pytest.raises(ValidationError, match="already enrolled"):
        member_enrol(project=study.project, annotator=outsider, actor=researcher)
    member_withdraw(member, actor=researcher)
    member_enrol(project=study.project, annotator=outsider, actor=researcher)  # again
    assert Notification.objects.filter(recipient=outsider).count() == 2
    assert queue.can_take(study, outsider)


def test_only_active_annotators_of_this_site_can_be_enrolled(study, researcher):
    imported = record("A1", AccountOrigin.STUDY_ARCHIVE)
    for person, why in ((researcher, "not an annotator"), (imported, "inactive or imported")):
        with pytest.raises(ValidationError, match=why):
            member_enrol(project=study.project, annotator=person, actor=researcher)


def test_staff_enrol_set_quotas_and_withdraw_on_the_members_page(
    researcher_client, study, outsider, clinicians
):
    url = reverse("annotation:staff_members", args=[study.project_id])
    page = researcher_client.get(url).content.decode()
    assert "outsider" in page and 'id="member-clinical-0"' in page
    researcher_client.post(url, {"people": [outsider.pk], "quota": "7"})
    member = ProjectMember.objects.get(annotator=outsider)
    assert member.is_active and member.quota == 7
    researcher_client.post(
        reverse("annotation:staff_member_quota", args=[member.pk]), {"quota": ""}
    )
    member.refresh_from_db()
    assert member.quota is None
    researcher_client.post(reverse("annotation:staff_member_withdraw", args=[member.pk]))
    member.refresh_from_db()
    assert not member.is_active
    assert 'id="withdrawn-members"' in researcher_client.get(url).content.decode()


def test_the_migration_enrols_every_annotator_with_work_in_a_project(study, clinicians):
    migration = import_module("annotation.migrations.0008_enrol_annotators_in_flight")
    working = clinicians[0]
    queue.next_assignment(study=study, annotator=working)
    imported = record("paper-doc", AccountOrigin.ANNOTATION_FILE)
    Assignment.objects.create(item=study.items.last(), annotator=imported, track="clinical",
                              status="submitted", queue_key="k")  # fmt: skip
    ProjectMember.objects.all().delete()  # the site as it was before enrolment existed
    migration.enrol_annotators_in_flight(apps, None)
    assert list(ProjectMember.objects.values_list("annotator__username", flat=True)) == [
        working.username
    ]
    assert queue.next_assignment(study=study, annotator=working) is not None  # resumes


def test_staff_and_other_annotators_cannot_open_the_members_page(client, study, clinicians):
    client.force_login(clinicians[0])
    url = reverse("annotation:staff_members", args=[study.project_id])
    assert client.get(url).status_code == 403


def test_annotators_of_another_project_never_see_this_one(client, study, scored_job):
    from tests.annotation.conftest import new_study

    other = new_study(scored_job, name="Elsewhere", project="Elsewhere", size=2)
    (elsewhere,) = annotators(Track.CLINICAL, 1, prefix="elsewhere", project="Elsewhere")
    assert [row["study"] for row in annotator_studies(elsewhere)] == [other]
    enrol(study, elsewhere)
    assert {row["study"] for row in annotator_studies(elsewhere)} == {other, study}
