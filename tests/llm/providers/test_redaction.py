"""redact removes anything key-like and the known keys, and leaves ordinary text alone;
failure_text is what a person reads of an exception."""

import logging
import sys

import pytest

from llm.engine.chat import ProviderError
from llm.engine.providers.redaction import (
    REDACTED,
    UNEXPECTED_FAILURE,
    failure_text,
    redact,
    redact_record,
)

OPENAI = "sk-proj-Zq81xVbT4mW0cR7nLp2sKd9fHj6gYa3e"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Incorrect API key provided: {OPENAI}.", f"Incorrect API key provided: {REDACTED}."),
        ("key sk-ant-api03-Jt5Rw8Qe1Yu4Io7Pa0Sd3Fg6Hk9L-zXc_AA", f"key {REDACTED}"),
        ("Incorrect API key provided: sk-proj-********************abcd", f"{REDACTED}"),
        ("sk-svcacct-abcdef123456 was revoked", f"{REDACTED} was revoked"),
        ("Authorization: Bearer abc.def-ghi", f"Authorization: {REDACTED}"),
        ("headers={'authorization': 'Basic dXNlcjpwYXNz'}", f"'authorization': '{REDACTED}'"),
        ("sent bearer eyJhbGciOiJIUzI1NiJ9", f"bearer {REDACTED}"),
        ("x-api-key: my-local-key", f"x-api-key: {REDACTED}"),
        ("GET /v1?api_key=abc123&model=x", f"api_key={REDACTED}&model=x"),
        ('{"api-key": "hunter22"}', f'"api-key": "{REDACTED}"'),
        ("Invalid API key: 0123abcd", f"Invalid API key: {REDACTED}"),
        ("token AIzaSyD3xK9mQ2pL7vR4nW8tY1uE6oI5aS0dF2g in query", f"token {REDACTED} in"),
    ],
)
def test_it_removes_anything_key_like(text, expected):
    redacted = redact(text)
    assert expected in redacted
    assert "hunter22" not in redacted and "abc123" not in redacted


@pytest.mark.parametrize(
    "text",
    [
        "HTTP 503: The server had an error while processing your request.",
        "conversation 3f2a9c1e8b7d4a6f9e0c1b2a3d4e5f60 lost the database",  # hex ids stay
        "run 6b1f7a0e-4c2d-4e8f-9a3b-1c5d7e9f0a2b",
        "task-subcategory risk-assessment desk-booking",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "password authentication failed for user",
        "https://platform.openai.com/account/api-keys",
    ],
)
def test_it_leaves_ordinary_text_alone(text):
    assert redact(text) == text


def test_known_keys_are_removed_whatever_their_shape():
    text = "refused key local-vllm-key-42, then local-vllm-key-42 again"
    assert (
        redact(text, ["local-vllm-key-42", ""]) == f"refused key {REDACTED}, then {REDACTED} again"
    )
    # Too short to be a key: replacing it everywhere would mangle words.
    assert redact("none of these", ["none"]) == "none of these"


def test_a_provider_error_reads_as_its_kind_and_redacted_message():
    error = ProviderError(f"HTTP 401: bad key {OPENAI}", kind="auth", status=401)
    assert failure_text(error) == f"provider error (auth): HTTP 401: bad key {REDACTED}"


def test_a_provider_error_says_how_often_it_was_asked_again():
    error = ProviderError("HTTP 503: busy", kind="server", status=503)
    error.retries = {"server": 1}
    assert failure_text(error) == "provider error (server, after 1 retry): HTTP 503: busy"
    error.retries = {"server": 2, "rate_limit": 3}
    assert failure_text(error) == "provider error (server, after 5 retries): HTTP 503: busy"


def test_a_file_error_keeps_the_operating_system_s_words():
    error = OSError(28, "No space left on device")
    assert (
        failure_text(error) == "the server could not read or write a file: No space left on device"
    )


def test_any_other_exception_reads_as_a_plain_sentence():
    error = AttributeError("'str' object has no attribute 'type'")
    assert failure_text(error) == UNEXPECTED_FAILURE
    assert "AttributeError" not in failure_text(error)


def test_a_log_record_is_redacted_in_its_message_arguments_and_traceback():
    try:
        raise RuntimeError(f"server said {OPENAI}")
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "llm",
        logging.WARNING,
        __file__,
        1,
        "call with %s failed: %s",
        ("secret-x1y2z3w4", OPENAI),
        exc_info,
    )
    redact_record(record, ["secret-x1y2z3w4"])
    text = logging.Formatter().format(record)
    assert "secret-x1y2z3w4" not in text and OPENAI not in text
    assert "RuntimeError: server said [redacted]" in text and "Traceback" in text
