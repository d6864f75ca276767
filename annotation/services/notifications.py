"""Notifications by email: written to the outbox in the request, sent by the workers.

The services record each event's messages with `annotation.services.outbox.notify`, in the
transaction that made the event; once it commits, one `annotation.notifications_send` task is
queued (annotation.tasks). Every worker also looks for due rows every
NOTIFICATION_TICK_SECONDS (config/celery.py, `SendsNotifications`), which sends what a lost
task or an unavailable queue left behind, retries failures and writes the deadline reminders.
Nothing is sent in a request.

Delivery claims a row before sending (`claimed_until`), so two workers, or a message delivered
twice, send it once; a row whose sender died is sent again after its claim ran out (at least
once: a crash between the mail server's answer and the status update sends it again). A mail
server's refusal is retried with a growing pause, MAX_ATTEMPTS times in all.

Texts are rendered at sending time from the templates in `templates/annotation/email/` (first
line: the subject) and go through the redactor of the study's runs. They name studies,
projects, guides and the recipient's own item numbers; never a model, an agent, a run, a score
or the jury. Their links start with SITE_URL (`manage.py demo` sets it from `--addr`).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.models import NotificationKind
from annotation.engine.blinding import Redactor, identity_words
from annotation.models import (
    Adjudication,
    Assignment,
    CalibrationGuide,
    Notification,
    NotificationStatus,
    Project,
    Study,
    StudyStatus,
)
from annotation.services.dashboard import study_pace
from annotation.services.outbox import notify
from annotation.services.worklist import annotator_studies, my_item_numbers
from benchmark.models import RunAgent
from llm.engine.providers.redaction import redact

logger = logging.getLogger(__name__)

CLAIM = timedelta(minutes=5)  # longer than a mail server may take (EMAIL_TIMEOUT)
RETRY_AFTER = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
)
MAX_ATTEMPTS = len(RETRY_AFTER) + 1
BATCH = 200  # rows one look sends at most; the next look takes the rest
REMINDER_BEFORE = timedelta(days=2)


# --- sending ------------------------------------------------------------------------------------


def notifications_send_due(*, now: datetime | None = None) -> int:
    """Send every due notification (pending, not held by another sender); returns how many
    were sent now."""
    now = now or timezone.now()
    due = Notification.objects.filter(status=NotificationStatus.PENDING).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
    ids = list(due.order_by("pk").values_list("pk", flat=True)[:BATCH])
    return sum(notification_deliver(pk, now=now) for pk in ids)


def notification_deliver(notification_id: int, *, now: datetime | None = None) -> bool:
    """Claim the row and send it, unless it is sent, settled or held by another sender;
    whether a message left now."""
    now = now or timezone.now()
    claimed = (
        Notification.objects.filter(pk=notification_id, status=NotificationStatus.PENDING)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + CLAIM, attempts=F("attempts") + 1)
    )
    if not claimed:
        return False
    notification = Notification.objects.select_related("recipient").get(pk=notification_id)
    settled = _not_to_send(notification)
    if settled:
        _settle(notification, settled)
        return False
    try:
        subject, body = notification_message(notification)
        send_mail(subject, body, None, [notification.recipient.email])
    except Exception as error:  # a mail-server fault (or a bad row): retried, never lost
        _failed(notification, error, now)
        return False
    _settle(notification, NotificationStatus.SENT, sent_at=timezone.now())
    return True


def _not_to_send(notification: Notification) -> str:
    person = notification.recipient
    if not person.is_active or not person.email:
        return NotificationStatus.UNDELIVERABLE
    if not person.wants(notification.kind):
        return NotificationStatus.TURNED_OFF
    return ""


def _settle(notification: Notification, status: str, **fields) -> None:
    Notification.objects.filter(pk=notification.pk).update(
        status=status, claimed_until=None, error="", **fields
    )


def _failed(notification: Notification, error: Exception, now: datetime) -> None:
    if isinstance(error, OSError):  # smtplib's errors and the network's
        said = redact(str(error)) or type(error).__name__
        text = f"the mail server did not take the message: {said}"
        logger.warning(
            "notification %s not sent (attempt %s): %s",
            notification.pk,
            notification.attempts,
            text,
        )
    else:
        text = "the message could not be written (a fault of the site; see the worker log)"
        logger.exception(
            "notification %s not written (attempt %s)", notification.pk, notification.attempts
        )
    if notification.attempts >= MAX_ATTEMPTS:
        fields = {"status": NotificationStatus.FAILED, "claimed_until": None}
    else:
        fields = {"claimed_until": now + RETRY_AFTER[notification.attempts - 1]}
    Notification.objects.filter(pk=notification.pk).update(error=text[:500], **fields)


# --- what a message says -------------------------------------------------------------------------


def notification_message(notification: Notification) -> tuple[str, str]:
    """(subject, body) of the message, rendered now and blinded."""
    context, redactor = _message_context(notification)
    text = render_to_string(f"annotation/email/{notification.kind}.txt", context)
    subject, _, body = redactor.text(text).strip().partition("\n")
    return subject.strip(), body.strip() + "\n"


def _message_context(notification: Notification) -> tuple[dict, Redactor]:
    ids = notification.context
    person = notification.recipient
    context = {
        "person": person,
        "site": settings.SITE_URL,
        "settings_url": settings.SITE_URL + reverse("notification_settings"),
        "note": ids.get("note", ""),
    }
    if "adjudication" in ids:
        adjudication = Adjudication.objects.select_related("item__study__project").get(
            pk=ids["adjudication"]
        )
        study = adjudication.item.study
        context |= {"study": study, "url": _url("annotation:adjudications")}
        return context, project_redactor(study.project_id)
    if "assignment" in ids:
        assignment = Assignment.objects.select_related("item__study__project").get(
            pk=ids["assignment"]
        )
        study = assignment.item.study
        numbers = my_item_numbers(person, [study.pk])
        context |= {
            "study": study,
            "number": numbers.get(assignment.item_id, {}).get("number"),
            "url": _url("annotation:review", assignment.public_id),
        }
        return context, project_redactor(study.project_id)
    if "study" in ids:
        study = Study.objects.select_related("project").get(pk=ids["study"])
        context |= {"study": study, "url": _url("annotation:queue", study.pk)}
        if "deadline" in ids:
            context["deadline"] = datetime.fromisoformat(ids["deadline"])
            context["left"] = ids.get("left")
        return context, project_redactor(study.project_id)
    if "guide" in ids:
        guide = CalibrationGuide.objects.select_related("project").get(pk=ids["guide"])
        context |= {"guide": guide, "project": guide.project, "url": _url("home")}
        return context, project_redactor(guide.project_id)
    project = Project.objects.get(pk=ids["project"])
    context |= {
        "project": project,
        "url": _url("home"),
        "studies": [
            row["study"]
            for row in annotator_studies(person)
            if row["open"] and row["study"].project_id == project.pk
        ],
    }
    return context, project_redactor(project.pk)


def _url(name: str, *args) -> str:
    return settings.SITE_URL + reverse(name, args=args)


def project_redactor(project_id: int) -> Redactor:
    """Every model string and agent label of the runs the project's studies were drawn from."""
    agents = RunAgent.objects.filter(
        run__scoring_jobs__studies__project_id=project_id
    ).select_related("agent_config")
    models, labels = set(), set()
    for agent in agents:
        models.add(agent.model)
        labels |= {agent.label, agent.agent_config.name}
    return Redactor(identity_words(models, labels))


# --- deadline reminders --------------------------------------------------------------------------


def deadline_reminders_create(*, now: datetime | None = None) -> int:
    """Remind each enrolled annotator with work left in an open study whose deadline is at most
    two days away (once per study, deadline and person: a moved deadline reminds again)."""
    now = now or timezone.now()
    studies = Study.objects.filter(
        status=StudyStatus.OPEN, deadline__gt=now, deadline__lte=now + REMINDER_BEFORE
    )
    created = 0
    for study in studies:
        for row in study_pace(study, now=now):
            left = row["pace"].target - row["pace"].submitted
            if left > 0:
                created += notify(
                    kind=NotificationKind.DEADLINE_SOON,
                    recipients=[row["annotator"]],
                    key=f"deadline:{study.pk}:{study.deadline.isoformat()}",
                    context={
                        "study": study.pk,
                        "deadline": study.deadline.isoformat(),
                        "left": left,
                    },
                )
    return created


def notifications_tick(*, now: datetime | None = None) -> int:
    """What every worker does every NOTIFICATION_TICK_SECONDS: write the reminders that are due,
    then send every due notification."""
    with transaction.atomic():
        deadline_reminders_create(now=now)
    return notifications_send_due(now=now)
