"""Redaction with the secrets this process is configured with: the provider keys, the secret
key, the mail password and the sign-on client's secret, for the database
(llm.fields.RedactedTextField) and the log.

Every log record is redacted where it is made: `configure_logging` (settings.LOGGING_CONFIG)
installs a record factory in every process Django sets up (web server, workers, management
commands), which sees every record of every logger. A filter would not: on a logger it misses
the records of its child loggers, and on a handler it is dropped when Celery replaces the root
logger's handlers in a worker. It lives here, with the secrets it needs, not in `config`:
the settings name it, and what Django reads before it loads the apps imports none of them.
"""

from __future__ import annotations

import logging
import logging.config

from llm.configured import provider_settings
from llm.engine.providers.redaction import redact, redact_record


def configured_secrets() -> tuple[str, ...]:
    """The provider keys, the secret key, the mail password and the sign-on client's secret this
    process runs with ("()" before the settings are loaded: logging must never fail for want of
    them)."""
    from django.conf import settings

    try:
        others = (settings.EMAIL_HOST_PASSWORD, settings.SSO_CLIENT_SECRET)
        return (*provider_settings().secrets(), settings.SECRET_KEY, *filter(None, others))
    except Exception:  # noqa: BLE001 - settings not configured yet
        return ()


def redact_configured(text: str) -> str:
    return redact(text, configured_secrets())


def configure_logging(logging_settings: dict) -> None:
    """settings.LOGGING_CONFIG: the dictConfig Django would apply, then redaction of every
    record."""
    logging.config.dictConfig(logging_settings)
    previous = logging.getLogRecordFactory()
    if getattr(previous, "redacts", False):  # set up twice in one process
        return

    def redacted_record(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record, configured_secrets())
        return record

    redacted_record.redacts = True
    logging.setLogRecordFactory(redacted_record)
