"""Recording staff actions. One call per state change, made by the service that changes it,
so the web, the CLI and the admin leave the same trail."""

from __future__ import annotations

from django.db import models

from audit.models import AuditEvent


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
    actor = actor if getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        actor=actor,
        action=action,
        object_type=target._meta.label if target is not None else "",
        object_id=str(target.pk) if target is not None else "",
        object_repr=str(target)[:300] if target is not None else "",
        before=before or {},
        after=after or {},
        note=note[:500],
    )


def fields_of(target: models.Model, *names: str) -> dict:
    """The named fields of a row as JSON-ready values (for before/after)."""
    return {name: _plain(getattr(target, name)) for name in names}


def _plain(value):
    if value is None or isinstance(value, (bool, int, float, str, list, dict)):
        return value
    return str(value)
