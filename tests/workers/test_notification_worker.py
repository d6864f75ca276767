"""Notifications are sent by real worker processes, once per event and person: on the queued
task (twice delivered, still one message), and without any task by every worker's periodic
look (config.celery.SendsNotifications), which also writes the deadline reminders."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from accounts.models import NotificationKind, Role, Track
from annotation.models import Notification, NotificationStatus, Project, ProjectMember, Study
from config import env
from tests.conftest import make_user
from tests.support.workers import (
    client_app,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def world(username: str) -> tuple:
    person = make_user(username, Role.ANNOTATOR, Track.CLINICAL)
    person.email = f"{username}@example.org"
    person.save(update_fields=["email"])
    project = Project.objects.create(name=f"Mail {username}")
    study = Study.objects.create(project=project, name="Mail study", kind="target", sample_size=1)
    ProjectMember.objects.create(project=project, annotator=person, enrolled_at=timezone.now())
    return person, study


def mail_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.log")) if folder.exists() else []


def all_sent() -> bool:
    return not Notification.objects.exclude(status=NotificationStatus.SENT).exists()


def mail_env(tmp_path: Path, **extra) -> dict:
    return worker_env(
        tmp_path, DATABASE_URL=test_database_url(), EMAIL_FILE_PATH=str(tmp_path / "mail"),
        EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend", **extra,
    )  # fmt: skip


def test_a_task_delivered_twice_sends_each_message_once(tmp_path, transport):
    person, study = world("twice")
    for key in ("study-opened:a", "study-opened:b"):
        Notification.objects.create(recipient=person, kind=NotificationKind.STUDY_OPENED,
                                    key=key, context={"study": study.pk})  # fmt: skip
    extra = {"NOTIFICATION_TICK_SECONDS": "3600"}  # only the task sends here
    if transport:
        extra["REDIS_URL"] = transport
    worker = start_worker(mail_env(tmp_path, **extra))
    try:
        app = client_app(env.celery_transport(transport, tmp_path / "queue"))
        app.send_task("annotation.notifications_send")
        app.send_task("annotation.notifications_send")  # a redelivery
        wait_for(all_sent, timeout=90, what="the worker to send the notifications")
        wait_for(lambda: _finished_tasks(tmp_path) >= 2, timeout=60, what="both deliveries")
    finally:
        stop_worker(worker)
    texts = [path.read_text() for path in mail_files(tmp_path / "mail")]
    assert sum(text.count("Subject: A new study is open: Mail study") for text in texts) == 2
    assert all("twice@example.org" in text for text in texts)


@pytest.mark.leg("sqlite")  # the worker's own timer, the same on either database
def test_every_worker_looks_for_due_mail_and_deadline_reminders_on_its_own(tmp_path):
    person, study = world("ticked")
    study.deadline = timezone.now() + timedelta(hours=30)
    study.save(update_fields=["deadline"])
    study.items.create(conversation=_a_conversation(), position=0)
    worker = start_worker(mail_env(tmp_path, NOTIFICATION_TICK_SECONDS="1"))
    try:
        wait_for(
            lambda: Notification.objects.filter(
                kind=NotificationKind.DEADLINE_SOON, status=NotificationStatus.SENT
            ).exists(),
            timeout=90,
            what="the worker's periodic look to write and send the reminder",
        )
    finally:
        stop_worker(worker)
    (reminder,) = Notification.objects.filter(recipient=person)
    assert reminder.attempts == 1
    texts = [path.read_text() for path in mail_files(tmp_path / "mail")]
    assert sum("Subject: Mail study: due" in text for text in texts) == 1


def _a_conversation():
    from tests.support.builders import enriched_set, launched_run

    return launched_run(
        enriched_set(name="mail set", size=1), name="mail run"
    ).conversations.first()


def _finished_tasks(data_dir: Path) -> int:
    log = (data_dir / "worker.log").read_text()
    return sum(
        "annotation.notifications_send[" in line and "succeeded" in line
        for line in log.splitlines()
    )
