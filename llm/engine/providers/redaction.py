"""No keys in what people or logs read, and plain words instead of Python internals.

A provider's error body may repeat the key it was sent ("Incorrect API key provided:
sk-..."), and a proxy may echo the Authorization header; either would otherwise reach a
failure reason, a page and the log. `redact` removes anything key-like, and the configured key
values themselves when the caller knows them. `failure_text` is the one way an exception
becomes text a person reads. `redact_record` applies `redact` to a log record.

Pure Python, no Django: the adapters use it where they build a ProviderError, the Django side
before storing failure text (llm.fields.RedactedTextField) and before logging (both with
llm.redaction, which knows the configured secrets).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from llm.engine.chat import ProviderError

REDACTED = "[redacted]"

# What a person reads when something other than a provider failed: the exception's own words
# are Python internals ("AttributeError: 'str' object has no attribute 'type'") and stay in
# the log, with the traceback.
UNEXPECTED_FAILURE = (
    "an unexpected error inside the platform stopped this work; the details are in the log"
)

# Shorter configured values are not searched for: replacing a four-letter placeholder
# everywhere would mangle ordinary words, and no provider issues keys that short.
MIN_SECRET_LENGTH = 8

_VALUE_END = r"[^\s\"',;&}\]]+"
# The name is kept ("Authorization: [redacted]"), so the text still says what was there.
_NAMED_VALUES = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_ ]?key|access[-_]?token|auth[-_]?token"
    r"|client[-_]?secret|secret[-_]?key|password)"
    r"([\"']?\s*[:=]\s*[\"']?)"
    rf"(?:(?:bearer|basic|token)\s+)?{_VALUE_END}"
)
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")
# OpenAI (sk-..., sk-proj-..., sk-svcacct-...) and Anthropic (sk-ant-api03-...) keys, whole
# or masked the way OpenAI quotes them back ("sk-proj-****...abcd").
_PROVIDER_KEY = re.compile(r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-*]{6,}")
# Any other long token mixing upper case, lower case and digits looks random: a key of some
# other vendor, a session token, a JWT segment. Hex digests and UUIDs (one case only) are
# left alone: logs need conversation ids.
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-+/=])[A-Za-z0-9_\-+/=]{32,}")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every key-like string, and every value in `secrets`, replaced by
    [redacted]."""
    if not text:
        return text
    for secret in sorted(_usable(secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _NAMED_VALUES.sub(lambda match: f"{match[1]}{match[2]}{REDACTED}", text)
    text = _BEARER.sub(lambda match: f"{match[1]} {REDACTED}", text)
    text = _PROVIDER_KEY.sub(REDACTED, text)
    return _LONG_TOKEN.sub(_random_looking, text)


def _usable(secrets: Iterable[str]) -> set[str]:
    return {secret for secret in secrets if secret and len(secret) >= MIN_SECRET_LENGTH}


def _random_looking(match: re.Match) -> str:
    token = match[0]
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token)
    return REDACTED if mixed and any(c.isdigit() for c in token) else token


def failure_text(error: BaseException) -> str:
    """What a person may read about `error`: a provider's account of its failure, stripped of
    anything key-like, or one plain sentence for any other exception (a fault of ours, whose
    words and traceback belong in the log, which the caller writes)."""
    if isinstance(error, ProviderError):
        return f"provider error ({_kind_and_retries(error)}): {redact(str(error))}"
    if isinstance(error, OSError):
        # The operating system's own words (a full disk, a missing folder) tell an admin what
        # to fix; they are not the platform's internals.
        return f"the server could not read or write a file: {redact(error.strerror or str(error))}"
    return UNEXPECTED_FAILURE


def _kind_and_retries(error: ProviderError) -> str:
    tried = sum(error.retries.values()) if error.retries else 0
    if not tried:
        return error.kind
    return f"{error.kind}, after {tried} {'retry' if tried == 1 else 'retries'}"


def redact_record(record: logging.LogRecord, secrets: Iterable[str] = ()) -> None:
    """Redact a log record in place: its message (with the arguments merged in), the
    traceback it carries and its stack."""
    secrets = tuple(secrets)
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
        return
    record.msg, record.args = redact(message, secrets), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text, secrets)
    if record.stack_info:
        record.stack_info = redact(record.stack_info, secrets)
