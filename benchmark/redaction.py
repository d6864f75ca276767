"""Redaction with the secrets this process is configured with: the provider keys, the secret
key and the mail password. The database side (benchmark.fields.RedactedTextField) and the log
side (config.redaction, set up with logging) both read them here."""

from __future__ import annotations

from benchmark.engine.providers.redaction import redact
from benchmark.engine.providers.settings import ProviderSettings


def configured_secrets() -> tuple[str, ...]:
    """The provider keys, the secret key and the mail password this process runs with ("()"
    before the settings are loaded: logging must never fail for want of them)."""
    from django.conf import settings

    try:
        mail = (settings.EMAIL_HOST_PASSWORD,) if settings.EMAIL_HOST_PASSWORD else ()
        return (*ProviderSettings.from_django().secrets(), settings.SECRET_KEY, *mail)
    except Exception:  # noqa: BLE001 - settings not configured yet
        return ()


def redact_configured(text: str) -> str:
    return redact(text, configured_secrets())
