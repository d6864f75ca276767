"""Celery tasks of the annotation app: thin wrappers that call the services."""

from celery import shared_task

from annotation.services.notifications import notifications_send_due
from jobs.services.queue import queue_send


@shared_task(name="annotation.notifications_send", acks_late=True)
def notifications_send_task() -> None:
    """Send every due notification; a duplicate delivery finds them claimed or sent."""
    notifications_send_due()


def notifications_send_soon(**_signal) -> None:
    """Queue a sending once the outbox recorded new rows (annotation.services.outbox.recorded,
    connected in AnnotationConfig.ready)."""
    # An unavailable queue loses nothing: the rows wait for the next look of any worker.
    queue_send(notifications_send_task.delay, what="the notifications to send")
