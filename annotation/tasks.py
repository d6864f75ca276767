"""Celery tasks of the annotation app: thin wrappers that call the services."""

from celery import shared_task

from annotation.services.notifications import notifications_send_due


@shared_task(name="annotation.notifications_send", acks_late=True)
def notifications_send_task() -> None:
    """Send every due notification; a duplicate delivery finds them claimed or sent."""
    notifications_send_due()
