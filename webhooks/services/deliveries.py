"""The delivery log: events written to it, and the workers' attempts to deliver them.

A job's end (or a provider batch's) writes one row per active hook, in the transaction that
records the end (so an event exists exactly when the end was committed); the caller queues
one task per row once that commits (webhooks.tasks). An attempt claims its row first, so a
task delivered twice, or a task and a worker's periodic look, send it once at a time; a row
whose sender died is taken again after its claim. A failed attempt is tried again after a
pause that doubles (engine.backoff), up to WEBHOOK_MAX_ATTEMPTS; a hook whose deliveries
failed WEBHOOK_DISABLE_AFTER times in a row is turned off. Delivery is at least once: a receiver
dedups on the event's id.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from jobs.models import JobStatus
from llm.engine.providers.redaction import redact
from webhooks.engine.backoff import retry_delay
from webhooks.engine.signing import SIGNATURE_HEADER, signature_header
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from webhooks.services.addresses import checked_opener
from webhooks.services.payloads import (
    batch_facts,
    batch_job_kind,
    event_body,
    job_description,
)

logger = logging.getLogger(__name__)

PING = "ping"
BATCH_ENDED = "batch.ended"
EXCERPT_CHARS = 500
BATCH = 200  # rows one periodic look attempts at most; the next look takes the rest
# A task that arrives this close before its row is due (a timer firing early) sends itself
# again for the rest; one further off leaves the row to the task or look already due then.
EARLY_SLACK_SECONDS = 2.0
USER_AGENT = "CareJury-Webhooks/1"


# --- writing events -------------------------------------------------------------------------


def job_event_record(job, status: str) -> list[int]:
    """One pending delivery per active hook for the end of `job`; their ids."""
    hooks = list(Webhook.objects.filter(active=True).values_list("pk", flat=True))
    if not hooks:
        return []  # the common case: one indexed query, nothing else on the job's path
    event = "job.failed" if status == JobStatus.FAILED else "job.finished"
    now = timezone.now()
    rows = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            hook_id=pk,
            event=event,
            job_kind=job._meta.label_lower,
            job_id=job.pk,
            job_status=status,
            next_attempt_at=now,
        )
        for pk in hooks
    )
    return [row.pk for row in rows]


def batch_event_record(batch) -> list[int]:
    """One pending delivery per active hook for the end of a provider batch (a ProviderBatch
    row), its body written now: the batch's state and counts as they were when it ended."""
    hooks = list(Webhook.objects.filter(active=True).values_list("pk", flat=True))
    if not hooks:
        return []
    now = timezone.now()
    rows = [
        WebhookDelivery(
            hook_id=pk,
            event=BATCH_ENDED,
            job_kind=batch_job_kind(batch),
            job_id=batch.job_id,
            job_status=batch.detail[:20],
            next_attempt_at=now,
        )
        for pk in hooks
    ]
    WebhookDelivery.objects.bulk_create(rows)
    facts = batch_facts(batch)
    for row in rows:  # the event's id and time are the row's, known once it is written
        at = row.created_at.isoformat()
        row.body = event_body(event=BATCH_ENDED, event_id=str(row.event_id), created_at=at, **facts)
    WebhookDelivery.objects.bulk_update(rows, ["body"])
    return [row.pk for row in rows]


def ping_record(hook: Webhook) -> WebhookDelivery:
    """A test event for `hook` (sent even while the hook is off, to check a receiver before
    turning it back on): attempted once, and it neither counts as a failure nor resets one."""
    return WebhookDelivery.objects.create(hook=hook, event=PING, next_attempt_at=timezone.now())


# --- attempts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What one POST came to: the receiver's status and words, or why there was none."""

    status: int | None = None
    excerpt: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def delivery_attempt(delivery_id: int, *, now: datetime | None = None) -> float | None:
    """Attempt the delivery if it is due and nobody holds it. The seconds until it should be
    attempted again (a retry after a failure, or a task that arrived early), else None."""
    now = now or timezone.now()
    if not _claim(delivery_id, now):
        return _early_by(delivery_id, now)
    delivery = WebhookDelivery.objects.select_related("hook").filter(pk=delivery_id).first()
    if delivery is None:
        return None  # its hook was deleted meanwhile
    if delivery.event != PING and not delivery.hook.active:
        _settle(delivery, DeliveryStatus.FAILED, error="The webhook was turned off.")
        return None
    body = _body_of(delivery)
    answer = _post(delivery, body)
    if answer.ok:
        _delivered(delivery, answer)
        return None
    return _failed(delivery, answer, now)


def deliveries_due(*, now: datetime | None = None) -> list[int]:
    """Pending deliveries whose time has come and that no sender holds (oldest first)."""
    now = now or timezone.now()
    due = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
    return list(due.order_by("next_attempt_at", "pk").values_list("pk", flat=True)[:BATCH])


def _claim(delivery_id: int, now: datetime) -> bool:
    hold = timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + 30)
    return bool(
        WebhookDelivery.objects.filter(
            pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
        )
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + hold, attempts=F("attempts") + 1, last_attempt_at=now)
    )


def _early_by(delivery_id: int, now: datetime) -> float | None:
    row = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, claimed_until__isnull=True
    ).first()
    if row is None:
        return None
    early = (row.next_attempt_at - now).total_seconds()
    return early if 0 < early <= EARLY_SLACK_SECONDS else None


def _body_of(delivery: WebhookDelivery) -> bytes:
    """The body, written at the first attempt and sent unchanged at every retry."""
    if not delivery.body:
        common = {
            "event": delivery.event,
            "event_id": str(delivery.event_id),
            "created_at": delivery.created_at.isoformat(),
        }
        if delivery.event == PING:
            text = event_body(**common, hook={"id": delivery.hook_id})
        else:
            job = job_description(delivery.job_kind, delivery.job_id, delivery.job_status)
            text = event_body(**common, job=job)
        WebhookDelivery.objects.filter(pk=delivery.pk).update(body=text)
        delivery.body = text
    return delivery.body.encode()


def _post(delivery: WebhookDelivery, body: bytes) -> Answer:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "CareJury-Event": delivery.event,
        "CareJury-Delivery": str(delivery.event_id),
        SIGNATURE_HEADER: signature_header(
            delivery.hook.secret, body, int(timezone.now().timestamp())
        ),
    }
    request = urllib.request.Request(delivery.hook.url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=settings.WEBHOOK_TIMEOUT_SECONDS) as response:
            return Answer(response.status, _excerpt(response.read(EXCERPT_CHARS * 4)))
    except urllib.error.HTTPError as error:  # the receiver answered, but not with a 2xx
        return Answer(error.code, _excerpt(error.read(EXCERPT_CHARS * 4)), f"HTTP {error.code}")
    # refused, timed out, no such host, a private address (services.addresses), bad URL
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        return Answer(error=f"No answer: {redact(str(reason)) or type(error).__name__}")


_OPENER = checked_opener()


def _excerpt(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")[:EXCERPT_CHARS]


def _delivered(delivery: WebhookDelivery, answer: Answer) -> None:
    _settle(
        delivery,
        DeliveryStatus.DELIVERED,
        response_status=answer.status,
        response_excerpt=answer.excerpt,
        delivered_at=timezone.now(),
    )
    if delivery.event != PING:
        Webhook.objects.filter(pk=delivery.hook_id).update(consecutive_failures=0)


def _failed(delivery: WebhookDelivery, answer: Answer, now: datetime) -> float | None:
    said = {"response_status": answer.status, "response_excerpt": answer.excerpt}
    where = f"webhook delivery {delivery.pk} to hook {delivery.hook_id}"
    logger.warning("%s failed (attempt %s): %s", where, delivery.attempts, answer.error)
    # `attempts` counts this one (the claim added it)
    last = delivery.event == PING or delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS
    if last:
        _settle(delivery, DeliveryStatus.FAILED, error=answer.error, **said)
        if delivery.event != PING:
            _hook_failure_count(delivery.hook)
        return None
    delay = retry_delay(
        delivery.attempts,
        base=settings.WEBHOOK_BACKOFF_SECONDS,
        cap=settings.WEBHOOK_BACKOFF_MAX_SECONDS,
    )
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        claimed_until=None,
        next_attempt_at=now + timedelta(seconds=delay),
        error=answer.error,
        **said,
    )
    return delay


def _hook_failure_count(hook: Webhook) -> None:
    """One more delivery failed in a row; past the limit the hook is turned off, saying why."""
    Webhook.objects.filter(pk=hook.pk).update(consecutive_failures=F("consecutive_failures") + 1)
    limit = settings.WEBHOOK_DISABLE_AFTER
    reason = f"Turned off after {limit} deliveries in a row failed every attempt."
    Webhook.objects.filter(pk=hook.pk, active=True, consecutive_failures__gte=limit).update(
        active=False, disabled_reason=reason
    )


def _settle(delivery: WebhookDelivery, status: str, **fields) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=status, claimed_until=None, **{"error": ""} | fields
    )
