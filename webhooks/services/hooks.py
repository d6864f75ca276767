"""Making, listing, turning on and deleting a researcher's webhooks."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from accounts.models import Role
from audit.services import audit_record
from webhooks.engine.signing import secret_new
from webhooks.models import Webhook
from webhooks.services.addresses import url_address_check

SCHEMES = ("http", "https")


def webhook_url_check(url: str) -> str:
    """The URL, stripped, or a ValidationError saying what is wrong with it: only http(s),
    with a host (a file:// or ftp:// URL would make the workers read or send elsewhere) whose
    addresses are public ones (services.addresses)."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise ValidationError(
            f"A webhook URL must start with http:// or https://, not {parts.scheme or 'nothing'}."
        )
    if not parts.hostname:
        raise ValidationError("A webhook URL needs a host, e.g. https://example.org/hooks.")
    if parts.username or parts.password:
        raise ValidationError(
            "Put no user name or password in the URL; the signature proves who sent it."
        )
    try:
        parts.port  # noqa: B018 - urllib checks the port only when it is read
    except ValueError:
        raise ValidationError("A webhook URL's port must be a number from 1 to 65535.") from None
    url_address_check(url)
    return url


def webhook_create(*, owner, url: str, description: str = "") -> tuple[Webhook, str]:
    """A new active hook and its secret (to show once: pages never show it again)."""
    secret = secret_new()
    hook = Webhook.objects.create(
        owner=owner, url=webhook_url_check(url), description=description, secret=secret
    )
    audit_record(actor=owner, action="webhook.created", target=hook, after={"url": hook.url})
    return hook, secret


def webhooks_visible(user) -> QuerySet[Webhook]:
    """A researcher's own hooks; an admin sees everybody's (to turn off one that misbehaves)."""
    hooks = Webhook.objects.select_related("owner")
    return hooks if user.has_role(Role.ADMIN) else hooks.filter(owner=user)


def webhook_enable(hook: Webhook, *, actor) -> None:
    """Turn a hook back on (after its receiver was fixed); its failure count starts again."""
    Webhook.objects.filter(pk=hook.pk).update(
        active=True, consecutive_failures=0, disabled_reason=""
    )
    audit_record(actor=actor, action="webhook.enabled", target=hook)


def webhook_delete(hook: Webhook, *, actor) -> None:
    """Delete the hook and its delivery log; deliveries in flight find it gone and stop."""
    audit_record(actor=actor, action="webhook.deleted", target=hook, before={"url": hook.url})
    hook.delete()
