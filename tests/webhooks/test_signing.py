"""Signatures a receiver can check, and the doubling pause between attempts (no Django)."""

import pytest

from webhooks.engine.backoff import retry_delay
from webhooks.engine.signing import (
    SignatureError,
    secret_new,
    signature_header,
    signature_verify,
)

BODY = b'{"event":"job.finished","id":"x"}'


def test_a_signed_body_verifies_with_its_secret():
    secret = secret_new()
    header = signature_header(secret, BODY, 1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    signature_verify(secret, BODY, header, now=1_700_000_010)


@pytest.mark.parametrize(
    "secret, body, now, words",
    [
        ("whsec_other", BODY, 1_700_000_000, "no signature"),
        ("whsec_right", BODY + b" ", 1_700_000_000, "no signature"),
        ("whsec_right", BODY, 1_700_000_000 + 301, "s away from now"),
    ],
    ids=["wrong secret", "changed body", "replayed late"],
)
def test_a_wrong_secret_a_changed_body_or_an_old_request_is_refused(secret, body, now, words):
    header = signature_header("whsec_right", BODY, 1_700_000_000)
    with pytest.raises(SignatureError, match=words):
        signature_verify(secret, body, header, now=now)


@pytest.mark.parametrize("header", ["", "t=abc,v1=00", "v1=00", "t=1700000000"])
def test_a_malformed_header_says_what_it_needs(header):
    with pytest.raises(SignatureError, match="needs t="):
        signature_verify("whsec_x", BODY, header, now=1_700_000_000)


def test_secrets_are_new_each_time_and_say_what_they_are():
    first, second = secret_new(), secret_new()
    assert first != second and first.startswith("whsec_") and len(first) > 40


def test_the_pause_doubles_from_the_base_up_to_the_cap():
    delays = [retry_delay(n, base=30, cap=3600) for n in range(1, 10)]
    assert delays == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]


def test_the_pause_refuses_nonsense():
    with pytest.raises(ValueError, match="at least one failed attempt"):
        retry_delay(0, base=1, cap=10)
    with pytest.raises(ValueError, match="positive"):
        retry_delay(1, base=0, cap=10)
