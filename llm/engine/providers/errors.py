"""Turn SDK exceptions and HTTP statuses into ProviderError kinds the retry policy acts on."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC
from email.utils import parsedate_to_datetime
from types import ModuleType
from typing import Any

from llm.engine.chat import ProviderError
from llm.engine.providers.redaction import redact

logger = logging.getLogger("llm")

# OpenAI's code, and llama.cpp server's error type, for a prompt longer than the window.
CONTEXT_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
# Servers that give no code say it in words: Anthropic ("prompt is too long"), vLLM
# ("maximum context length"), Ollama and others ("context window", "context size").
_CONTEXT_OVERFLOW_WORDING = re.compile(
    r"prompt is too long|maximum context length|context (window|length|size|limit)", re.IGNORECASE
)


@contextmanager
def provider_faults(sdk: ModuleType, *, model: str, secrets: Iterable[str] = ()) -> Iterator[None]:
    """Wrap one HTTP call and the parsing of its reply: whatever goes wrong in there is the
    server's fault and leaves as a ProviderError, never as an AttributeError or TypeError that
    would be blamed on the model under test. Both adapters use this, so a fault is classified
    the same way whichever SDK met it, and its message never carries a key: the server's words
    are redacted here, where they enter (`secrets`: the key this adapter sends)."""
    try:
        yield
    except ProviderError:
        raise
    except sdk.APIError as error:
        mapped = error_from_sdk(error, sdk)
        raise _redacted(mapped, secrets) from error
    except Exception as error:  # a body that is not the promised shape: {}, null, HTML, ...
        # The exception's words are Python internals: people read a plain sentence, the
        # traceback goes to the log (redacted like every record).
        logger.warning("the reply from %s was not in the expected shape", model, exc_info=True)
        raise ProviderError(
            f"the reply from {model} was not in the expected shape", kind="malformed"
        ) from error


def _redacted(error: ProviderError, secrets: Iterable[str]) -> ProviderError:
    return ProviderError(
        redact(str(error), secrets),
        kind=error.kind,
        retry_after=error.retry_after,
        status=error.status,
    )


def error_from_sdk(error: Exception, sdk: ModuleType) -> ProviderError:
    """Map an exception raised by the openai or anthropic SDK (passed as `sdk`)."""
    if isinstance(error, sdk.APITimeoutError):
        return ProviderError(f"the model call timed out: {error}", kind="timeout")
    if isinstance(error, sdk.APIConnectionError):
        return ProviderError(f"could not reach the model server: {error}", kind="connection")
    if isinstance(error, sdk.APIStatusError):
        message, code = _error_detail(error.body, fallback=str(error))
        return error_from_status(error.status_code, message, code, error.response.headers)
    return ProviderError(f"unusable answer from the model server: {error}", kind="malformed")


def error_from_status(
    status: int, message: str, code: str | None, headers: Mapping[str, str]
) -> ProviderError:
    kind = classify_status(status, message, code)
    retry_after = parse_retry_after(headers) if kind in ProviderError.RETRYABLE_KINDS else None
    return ProviderError(
        f"HTTP {status}: {message}", kind=kind, retry_after=retry_after, status=status
    )


def classify_status(status: int, message: str, code: str | None) -> str:
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"
    # 409 is a transient conflict on the provider's side (e.g. a concurrent update); retried.
    if status == 409 or status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    if status == 413 or code in CONTEXT_OVERFLOW_CODES or _CONTEXT_OVERFLOW_WORDING.search(message):
        return "context_overflow"
    return "bad_request"


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait, from retry-after-ms or retry-after (seconds or an HTTP date)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        seconds = _number(milliseconds)
        if seconds is not None:
            return max(seconds / 1000, 0.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return max(seconds, 0.0)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # "-0000" dates parse naive; HTTP dates are always UTC
        moment = moment.replace(tzinfo=UTC)
    return max(moment.timestamp() - now(), 0.0)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _error_detail(body: Any, *, fallback: str) -> tuple[str, str | None]:
    """(message, code) from an OpenAI-style or Anthropic-style error body."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return fallback, None
    code = body.get("code") or body.get("type")
    return str(body.get("message") or fallback), str(code) if code else None
