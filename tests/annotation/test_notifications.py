"""Notifications: written to the outbox with the event, sent by a worker once per event and
person, retried when the mail server refuses, skipped when the person turned the kind off, and
never naming a model or a score (the blinding crawl renders every kind). Through the services
and the pages; tests/workers/test_notification_worker.py has a real worker send them."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import NotificationKind, Track
from annotation.models import CalibrationGuide, Notification, NotificationStatus
from annotation.services import queue
from annotation.services.annotations import annotation_submit
from annotation.services.enrolment import member_enrol
from annotation.services.guides import guide_publish
from annotation.services.moves import study_deadline_set
from annotation.services.notifications import (
    MAX_ATTEMPTS,
    deadline_reminders_create,
    notification_deliver,
    notification_message,
    notifications_send_due,
    notifications_tick,
)
from annotation.services.outbox import notify
from annotation.tasks import notifications_send_task
from tests.annotation.conftest import annotators, new_study
from tests.annotation.mail_backends import RefusingBackend
from tests.annotation.test_annotation_writes import full_draft
from tests.support.import_graph import module_imports, package_modules, resolve
from tests.support.layers import PROJECT_PACKAGES

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(db):
    (person,) = annotators(Track.CLINICAL, 1, prefix="reader", project=None)
    person.email = "reader@example.org"
    person.save(update_fields=["email"])
    return person


def test_one_event_notifies_each_person_once_however_often_it_is_recorded(study, reader):
    for _ in range(3):
        notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader, reader],
               key="study-opened:1", context={"study": study.pk})  # fmt: skip
    assert Notification.objects.filter(recipient=reader).count() == 1


def test_a_worker_sends_it_once_and_a_second_delivery_sends_nothing(study, reader, mailoutbox):
    notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k",
           context={"study": study.pk})  # fmt: skip
    (row,) = Notification.objects.all()
    assert notifications_send_due() == 1
    assert notification_deliver(row.pk) is False and notifications_send_due() == 0
    (message,) = mailoutbox
    assert message.to == ["reader@example.org"]
    assert message.subject == f"A new study is open: {study.name}"
    assert reverse("annotation:queue", args=[study.pk]) in message.body
    row.refresh_from_db()
    assert row.status == NotificationStatus.SENT and row.sent_at is not None


def test_a_row_held_by_another_sender_is_left_to_it(study, reader, mailoutbox):
    notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k",
           context={"study": study.pk})  # fmt: skip
    Notification.objects.update(claimed_until=timezone.now() + timedelta(minutes=4))
    assert notifications_send_due() == 0 and mailoutbox == []
    later = timezone.now() + timedelta(minutes=5)  # that sender died: its claim ran out
    assert notifications_send_due(now=later) == 1 and len(mailoutbox) == 1


def test_a_refusing_mail_server_is_retried_then_given_up(study, reader, settings, mailoutbox):
    settings.EMAIL_BACKEND = "tests.annotation.mail_backends.RefusingBackend"
    RefusingBackend.refusals = 1
    notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k",
           context={"study": study.pk})  # fmt: skip
    assert notifications_send_due() == 0
    row = Notification.objects.get()
    assert row.status == NotificationStatus.PENDING and row.attempts == 1
    assert "did not take the message" in row.error and row.claimed_until > timezone.now()
    assert notifications_send_due() == 0  # not before its pause ran out
    assert notifications_send_due(now=row.claimed_until + timedelta(seconds=1)) == 1
    assert len(mailoutbox) == 1
    RefusingBackend.refusals = MAX_ATTEMPTS
    notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k2",
           context={"study": study.pk})  # fmt: skip
    moment = timezone.now()
    for _ in range(MAX_ATTEMPTS):
        moment += timedelta(hours=3)
        notifications_send_due(now=moment)
    failed = Notification.objects.get(key="k2")
    assert failed.status == NotificationStatus.FAILED and failed.attempts == MAX_ATTEMPTS
    RefusingBackend.refusals = 0


def test_a_kind_turned_off_is_not_sent_and_neither_is_mail_without_an_address(
    study, reader, mailoutbox
):
    reader.notifications_off = [NotificationKind.STUDY_OPENED]
    reader.save(update_fields=["notifications_off"])
    (silent,) = annotators(Track.CLINICAL, 1, prefix="silent", project=None)  # no email
    notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader, silent], key="k",
           context={"study": study.pk})  # fmt: skip
    notify(kind=NotificationKind.ENROLLED, recipients=[reader], key="e",
           context={"project": study.project_id})  # fmt: skip
    assert notifications_send_due() == 1 and [m.subject for m in mailoutbox] == [
        f"You were enrolled in {study.project.name}"
    ]
    statuses = dict(Notification.objects.values_list("recipient__username", "status"))
    assert statuses["silent-0"] == NotificationStatus.UNDELIVERABLE
    assert Notification.objects.get(recipient=reader, key="k").status == "turned_off"


def test_each_event_writes_its_notification(study, clinicians, researcher, reader):
    member_enrol(project=study.project, annotator=reader, actor=researcher)
    assert Notification.objects.filter(recipient=reader, kind="enrolled").exists()
    opened = new_study(study.scoring_jobs.get(), name="Second", size=2)
    opened_for = set(Notification.objects.filter(kind="study_opened", context__study=opened.pk)
                     .values_list("recipient__username", flat=True))  # fmt: skip
    assert opened_for == {"reader-0", *(c.username for c in clinicians)}
    guide = CalibrationGuide.objects.create(
        project=study.project, title="Lessons", body_markdown="-"
    )
    guide_publish(guide, actor=researcher)
    guide_publish(guide, actor=researcher)  # published once: notified once
    assert Notification.objects.filter(kind="guide_published", recipient=reader).count() == 1


def test_targets_open_only_to_licensed_members_and_only_they_hear_of_them(scored_job):
    (student,) = annotators(Track.CLINICAL, 1, licensed=False, prefix="student")
    target = new_study(scored_job, name="Main", size=2)
    assert not Notification.objects.filter(recipient=student, context__study=target.pk)
    calibration = new_study(scored_job, name="Round 9", kind="calibration", size=1,
                            project="Practice")  # fmt: skip
    assert not Notification.objects.filter(context__study=calibration.pk)  # nobody enrolled


def test_deadline_reminders_go_once_two_days_before_to_those_with_work_left(
    study, clinicians, researcher
):
    done, busy, idle = clinicians  # `done` scores everything the queue gives them
    while (assignment := queue.next_assignment(study=study, annotator=done)) is not None:
        annotation_submit(assignment, draft=full_draft(assignment), version=0, actor=done)
    study_deadline_set(study, deadline=timezone.now() + timedelta(days=5), actor=researcher)
    assert deadline_reminders_create() == 0  # not yet two days before
    soon = timezone.now() + timedelta(days=3, hours=1)
    reminded = deadline_reminders_create(now=soon)
    assert reminded == 2 and deadline_reminders_create(now=soon) == 0  # once
    names = set(Notification.objects.filter(kind="deadline_soon")
                .values_list("recipient__username", flat=True))  # fmt: skip
    assert names == {busy.username, idle.username}
    text = "\n".join(notification_message(Notification.objects.filter(kind="deadline_soon")[0]))
    assert "still to be submitted" in text
    study_deadline_set(study, deadline=timezone.now() + timedelta(days=1), actor=researcher)
    assert deadline_reminders_create() == 2  # a moved deadline reminds again


def test_the_tick_writes_reminders_and_sends_everything_due(study, clinicians, mailoutbox):
    Notification.objects.all().delete()  # their enrolment notices aside
    for person in clinicians:
        person.email = f"{person.username}@example.org"
        person.save(update_fields=["email"])
    study_deadline_set(study, deadline=timezone.now() + timedelta(hours=30), actor=None)
    assert notifications_tick() == 3
    assert {m.to[0] for m in mailoutbox} == {f"{c.username}@example.org" for c in clinicians}
    assert notifications_tick() == 0


def test_each_person_turns_kinds_off_on_their_settings_page(client, reader):
    client.force_login(reader)
    url = reverse("notification_settings")
    page = client.get(url).content.decode()
    assert page.count('type="checkbox"') == len(NotificationKind.values) and "checked" in page
    wanted = [k for k in NotificationKind.values if k != NotificationKind.DEADLINE_SOON]
    client.post(url, {"wanted": wanted})
    reader.refresh_from_db()
    assert reader.notifications_off == [NotificationKind.DEADLINE_SOON]
    assert not reader.wants(NotificationKind.DEADLINE_SOON) and reader.wants("enrolled")


def test_a_message_that_cannot_be_written_is_retried_like_a_refusal_not_stuck(reader):
    notify(
        kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k", context={"study": 987654}
    )  # fmt: skip - a study that is not there
    assert notifications_send_due() == 0
    row = Notification.objects.get()
    assert row.status == NotificationStatus.PENDING and row.attempts == 1
    assert "could not be written" in row.error and row.claimed_until > timezone.now()


def test_the_outbox_queues_one_sending_once_the_event_commits(
    study, reader, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(notifications_send_task, "delay", lambda: queued.append(1))
    with django_capture_on_commit_callbacks(execute=True):
        notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k",
               context={"study": study.pk})  # fmt: skip
        assert queued == []  # nothing before the commit: the row might still roll back
    assert queued == [1]
    with django_capture_on_commit_callbacks(execute=True):  # the same event again: no new row
        notify(kind=NotificationKind.STUDY_OPENED, recipients=[reader], key="k",
               context={"study": study.pk})  # fmt: skip
    assert queued == [1]


def test_the_outbox_imports_only_models():
    """The services that record events import the outbox; it must not reach back into them."""
    modules = {
        name: path
        for package in PROJECT_PACKAGES
        for name, path in package_modules(package).items()
    }
    imported = module_imports("annotation.services.outbox", modules)
    assert {resolve(name, modules) for name, _ in imported} - {None} == {
        "accounts.models",
        "annotation.models",
    }
