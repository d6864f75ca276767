"""Recording staff actions and reads. One call per state change, made by the service that
changes it, so the web, the CLI and the admin leave the same trail; reads are recorded by
`audit.reads.ReadAuditMiddleware`. Every record joins the hash chain (audit.chain)."""

from __future__ import annotations

from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from audit.chain import GENESIS, HASHED_FIELDS, Break, first_break, record_hash
from audit.models import AuditChainHead, AuditEvent

HEAD_ID = 1


def audit_record(
    *,
    actor,
    action: str,
    target: models.Model | None,
    before: dict | None = None,
    after: dict | None = None,
    note: str = "",
) -> AuditEvent:
    """`target` is None for an action on no one row (a download of the whole audit trail)."""
    return _append(
        actor=actor,
        action=action,
        object_type=target._meta.label if target is not None else "",
        object_id=str(target.pk) if target is not None else "",
        object_repr=str(target)[:300] if target is not None else "",
        before=before or {},
        after=after or {},
        note=note[:500],
    )


def audit_read(*, actor, action: str, object_type: str, object_id: str, path: str) -> AuditEvent:
    """Someone opened a page or an API resource that shows study data (`action` "read.<what>").
    The row is named by its type and id only: loading it to describe it would cost a query on
    every page view."""
    return _append(
        actor=actor,
        action=action,
        object_type=object_type,
        object_id=object_id[:64],
        object_repr=path[:300],
        before={},
        after={},
        note="",
    )


def _append(*, actor, **fields) -> AuditEvent:
    actor = actor if getattr(actor, "is_authenticated", False) else None
    with transaction.atomic():
        head = _locked_head()
        event = AuditEvent(actor=actor, at=timezone.now(), previous_hash=head.last_hash, **fields)
        hashed = {**fields, "at": event.at, "actor_id": actor.pk if actor else None}
        event.hash = record_hash(head.last_hash, hashed)
        event.save()
        AuditChainHead.objects.filter(pk=HEAD_ID).update(last_hash=event.hash)
    return event


def _locked_head() -> AuditChainHead:
    # The update comes first: it takes the write lock (SQLite) or the row lock (PostgreSQL)
    # before the head is read, so no other writer can read the same last hash meanwhile.
    if not AuditChainHead.objects.filter(pk=HEAD_ID).update(length=F("length") + 1):
        # The first record ever (or a table emptied by a test's flush). Two writers may both
        # get here: the head is made once (the other's insert is ignored, after waiting for
        # the first on PostgreSQL), then counted like any other record.
        first = AuditChainHead(pk=HEAD_ID, last_hash=GENESIS, length=0)
        AuditChainHead.objects.bulk_create([first], ignore_conflicts=True)
        AuditChainHead.objects.filter(pk=HEAD_ID).update(length=F("length") + 1)
    return AuditChainHead.objects.select_for_update().get(pk=HEAD_ID)


def audit_chain_break() -> Break | None:
    """The first record of the trail whose hashes do not hold, or None when the chain holds."""
    head = AuditChainHead.objects.filter(pk=HEAD_ID).first()
    records = AuditEvent.objects.order_by("pk").values(
        "id", "previous_hash", "hash", *HASHED_FIELDS
    )
    # Without its head row the chain must be empty: records left without one were cut off.
    last_hash = head.last_hash if head else GENESIS
    return first_break(records.iterator(chunk_size=2000), last_hash)


def fields_of(target: models.Model, *names: str) -> dict:
    """The named fields of a row as JSON-ready values (for before/after)."""
    return {name: _plain(getattr(target, name)) for name in names}


def _plain(value):
    if value is None or isinstance(value, (bool, int, float, str, list, dict)):
        return value
    return str(value)
