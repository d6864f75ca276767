"""Celery tasks of the webhooks: one task per delivery attempt, on the site's queue (the
embedded folder queue or Redis), and the listener that writes a job's end to the log."""

from __future__ import annotations

import logging
from functools import partial

from celery import shared_task
from django.db import transaction

from jobs.services.queue import queue_send
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services.deliveries import (
    batch_event_record,
    deliveries_due,
    delivery_attempt,
    job_event_record,
    ping_record,
)

logger = logging.getLogger(__name__)


@shared_task(name="webhooks.deliver", acks_late=True)
def delivery_task(delivery_id: int) -> None:
    """Attempt one delivery; a failure sends this task again after its backoff."""
    retry_in = delivery_attempt(delivery_id)
    if retry_in is not None:
        delivery_send(delivery_id, countdown=retry_in)


def delivery_send(delivery_id: int, *, countdown: float = 0) -> None:
    # An unavailable queue loses nothing: the row waits for a worker's periodic look.
    queue_send(
        partial(delivery_task.apply_async, (delivery_id,), countdown=countdown),
        what=f"webhook delivery {delivery_id}",
    )


def deliveries_send_soon(delivery_ids: list[int]) -> None:
    """Queue the deliveries once the transaction that wrote them commits."""
    for delivery_id in delivery_ids:
        transaction.on_commit(partial(delivery_send, delivery_id))


def ping_send(hook: Webhook) -> WebhookDelivery:
    """A test event for `hook`, queued once recorded (the page's button and the API's route)."""
    delivery = ping_record(hook)
    deliveries_send_soon([delivery.pk])
    return delivery


def job_ended_deliver(sender, job, status: str, **_signal) -> None:
    """Listener of jobs.signals.job_ended. Its rows are written in a savepoint of the job's
    transaction: a fault here is logged and never undoes or breaks the job's end."""
    try:
        with transaction.atomic():
            delivery_ids = job_event_record(job, status)
    except Exception:
        logger.exception("could not record the webhook events of %s %s", sender.__name__, job.pk)
        return
    deliveries_send_soon(delivery_ids)


def batch_ended_deliver(sender, batch, **_signal) -> None:
    """Listener of jobs.signals.batch_ended, in a savepoint of the transaction that records
    the batch's end, like job_ended_deliver."""
    try:
        with transaction.atomic():
            delivery_ids = batch_event_record(batch)
    except Exception:
        logger.exception("could not record the webhook events of provider batch %s", batch.pk)
        return
    deliveries_send_soon(delivery_ids)


def deliveries_tick() -> int:
    """What every worker does every WEBHOOK_TICK_SECONDS (config.celery.DeliversWebhooks):
    attempt each due delivery a lost task or an unavailable queue left behind; how many."""
    due = deliveries_due()
    for delivery_id in due:
        retry_in = delivery_attempt(delivery_id)
        if retry_in is not None:
            delivery_send(delivery_id, countdown=retry_in)
    return len(due)
