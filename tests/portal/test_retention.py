"""Retention: the dry run lists what a project's retention period lets go and changes nothing;
the purge removes conversation text, free text and annotators' personal data, keeps every
figure of the study, refuses a study no one exported, and is audited. Forgetting one person
keeps their annotations under a pseudonym."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from alignment.services.archive import study_tables
from annotation.models import Assignment, Study, StudyPurge
from annotation.services.studies import study_lock
from audit.models import AuditEvent
from audit.services import audit_chain_break, audit_record
from benchmark.models import TraceEvent
from portal.services.retention import MASK, RetentionError, person_forget, purge_plan
from tests.alignment.conftest import annotated_study, people  # noqa: F401 - fixtures
from tests.annotation.conftest import new_study
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(annotated_study):  # noqa: F811 - the imported fixture
    """The annotated study, locked 40 days ago in a project that keeps data 30 days."""
    study_lock(annotated_study)
    Study.objects.filter(pk=annotated_study.pk).update(
        locked_at=timezone.now() - timedelta(days=40)
    )
    annotated_study.project.retention_days = 30
    annotated_study.project.save()
    annotated_study.refresh_from_db()
    return annotated_study


def exported(study) -> None:
    audit_record(actor=None, action="download.archive", target=study, after={"file": "a.zip"})


def run(*arguments) -> str:
    out = StringIO()
    call_command("purge", *arguments, stdout=out)
    return out.getvalue()


def conversation_text(study) -> int:
    """Events of the study's conversations whose text is still readable (not the mask)."""
    events = TraceEvent.objects.filter(conversation__study_items__study=study)
    return sum(1 for text in events.values_list("content", flat=True) if text.strip(MASK))


def test_the_dry_run_lists_the_study_and_changes_nothing(expired):
    text_before = conversation_text(expired)
    output = run("--dry-run")
    assert "Pilot / Target study" in output and "NEVER EXPORTED" in output
    assert "personal data of 4 annotators" in output
    assert "Dry run: nothing was changed." in output
    assert conversation_text(expired) == text_before > 0
    assert not StudyPurge.objects.exists()


def test_a_study_within_its_retention_period_is_not_due(expired):
    expired.project.retention_days = 60
    expired.project.save()
    assert purge_plan() == []
    assert "No study is past" in run()


def test_a_study_no_one_exported_is_refused_unless_forced(expired):
    with pytest.raises(CommandError, match="No export of Target study"):
        run()
    assert conversation_text(expired) > 0
    run("--force-without-export")
    assert StudyPurge.objects.get(study=expired).forced_without_export


def test_the_purge_removes_text_and_people_and_keeps_every_figure(expired):
    exported(expired)
    cache.clear()
    before = study_tables(expired)
    annotators = set(
        Assignment.objects.filter(item__study=expired).values_list("annotator", flat=True)
    )
    run()
    expired.refresh_from_db()
    assert expired.purged_at is not None
    assert conversation_text(expired) == 0
    kept = Assignment.objects.filter(item__study=expired)
    assert not kept.exclude(feedback={}).exists() and kept.filter(scores={}).count() == 0
    gone = User.objects.filter(pk__in=annotators)
    assert {p.username for p in gone} == {f"forgotten-{p.pk}" for p in gone}
    assert not any(p.is_active or p.email or p.has_usable_password() for p in gone)
    cache.clear()
    assert study_tables(expired) == before
    record = StudyPurge.objects.get(study=expired)
    assert record.export["action"] == "download.archive" and len(record.removed_sha256) == 64
    assert record.counts["people"] == 4 and set(record.table_sha256) == set(before)
    assert AuditEvent.objects.filter(action="study.purged", object_id=str(expired.pk)).exists()
    assert audit_chain_break() is None
    assert "No study is past" in run()  # a purged study is not due again


def test_a_conversation_another_study_still_needs_keeps_its_text(expired, scored_job):  # noqa: F811
    new_study(scored_job, name="Still running", size=8)
    exported(expired)
    [plan] = purge_plan()
    assert plan.conversations == [] and plan.people == []
    run()
    assert conversation_text(expired) > 0
    assert not Assignment.objects.filter(item__study=expired).exclude(feedback={}).exists()


def test_forgetting_a_person_keeps_their_annotations_under_a_pseudonym(expired):
    person = Assignment.objects.filter(item__study=expired).first().annotator
    count = person.assignments.count()
    call_command("forget_person", person.username, stdout=StringIO())
    person.refresh_from_db()
    assert person.username == f"forgotten-{person.pk}" and not person.is_active
    assert person.assignments.count() == count
    assert AuditEvent.objects.filter(action="person.anonymised", object_id=str(person.pk)).exists()
    with pytest.raises(CommandError, match="forgotten already"):
        call_command("forget_person", person.username)


def test_staff_accounts_are_not_forgotten_this_way(researcher):
    with pytest.raises(RetentionError, match="only annotators"):
        person_forget(researcher, actor=None)


def test_the_admin_purge_shows_the_dry_run_then_purges_on_confirmation(admin_client_, expired):
    exported(expired)
    changelist = reverse("admin:annotation_project_changelist")
    chosen = {"action": "purge_due", "_selected_action": [expired.project.pk]}
    listing = admin_client_.post(changelist, chosen)
    assert b"Target study" in listing.content and b"Purge now" in listing.content
    assert not StudyPurge.objects.exists()
    admin_client_.post(changelist, chosen | {"confirm": "yes"})
    assert StudyPurge.objects.get(study=expired).by.username == "adam"


def test_the_admin_forgets_a_person_after_confirmation(admin_client_, expired):
    person = Assignment.objects.filter(item__study=expired).first().annotator
    changelist = reverse("admin:accounts_user_changelist")
    chosen = {"action": "forget_people", "_selected_action": [person.pk]}
    page = admin_client_.post(changelist, chosen)
    assert person.username.encode() in page.content
    admin_client_.post(changelist, chosen | {"confirm": "yes"})
    person.refresh_from_db()
    assert person.username == f"forgotten-{person.pk}"


def test_the_retention_period_is_set_in_the_admin_and_audited(admin_client_, expired):
    url = reverse("admin:annotation_project_change", args=[expired.project.pk])
    admin_client_.post(url, {"retention_days": "365"})
    expired.project.refresh_from_db()
    assert expired.project.retention_days == 365
    assert AuditEvent.objects.filter(action="project.retention_changed").exists()
