"""The outbox: where a service records a message to send, in the transaction of the event.

`notify` writes one `Notification` row per recipient, keyed by the event (an audit event, a
history entry, a study's deadline), so the same event never notifies a person twice: a unique
(recipient, key) refuses the second row. Once the transaction commits it announces
`recorded`; the annotation app connects that to queueing one `annotation.notifications_send`
task (annotation.tasks), and annotation.services.notifications sends the rows. The services
that record events import this module, which imports only models: sending, rendering and
reminders (which read the worklist and the dashboard) sit above it, so no circle runs back.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.dispatch import Signal

from accounts.models import NotificationKind
from annotation.models import Notification

# Sent once the transaction that recorded new rows has committed, so a worker can send them
# soon. No arguments besides the sender (Notification).
recorded = Signal()


def notify(*, kind: str, recipients: Iterable, key: str, context: dict) -> int:
    """Put the event in the outbox for each recipient (once per event and person) and have a
    worker send it after the transaction commits. Returns how many rows are new."""
    if kind not in NotificationKind.values:
        raise ValueError(f"unknown notification kind {kind!r}")
    people = {person.pk: person for person in recipients}
    known = set(
        Notification.objects.filter(key=key, recipient_id__in=people).values_list(
            "recipient_id", flat=True
        )
    )
    new = [
        Notification(recipient=person, kind=kind, key=key, context=context)
        for pk, person in people.items()
        if pk not in known
    ]
    Notification.objects.bulk_create(new, ignore_conflicts=True)  # a racing twin: kept once
    if new:
        transaction.on_commit(_announce)
    return len(new)


def _announce() -> None:
    recorded.send(sender=Notification)
