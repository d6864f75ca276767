"""Signing a webhook's body, and checking a signature as a receiver should.

The header names the time of sending and an HMAC-SHA256, keyed with the hook's secret, over
"<timestamp>.<body>" (the raw bytes sent): `t=1767312000,v1=5f0c...`. Putting the time under
the signature lets a receiver refuse an old request replayed to it; the `v1=` label leaves
room for another scheme beside it later. This is the same shape as Stripe's, so receivers
that already check those need only the header's name changed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "CareJury-Signature"
SCHEME = "v1"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_SECONDS = 300


class SignatureError(ValueError):
    """A signature header that does not prove the body came from the site; says why."""


def secret_new() -> str:
    """A fresh secret: 32 random bytes, URL-safe, with a prefix that tells what it is."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, body: bytes, timestamp: int) -> str:
    signed = str(int(timestamp)).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_header(secret: str, body: bytes, timestamp: int) -> str:
    """The header value sent with `body`."""
    return f"t={int(timestamp)},{SCHEME}={signature(secret, body, timestamp)}"


def signature_verify(
    secret: str,
    body: bytes,
    header: str,
    *,
    now: float,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
) -> None:
    """Raise SignatureError unless `header` signs `body` with `secret` and was made within
    `tolerance` seconds of `now`. The comparison takes the same time whatever the header says."""
    timestamp, signatures = _header_parts(header)
    if abs(now - timestamp) > tolerance:
        raise SignatureError(f"the timestamp is {abs(now - timestamp):.0f} s away from now")
    expected = signature(secret, body, timestamp)
    if not any(hmac.compare_digest(expected, given) for given in signatures):
        raise SignatureError("no signature in the header matches the body")


def _header_parts(header: str) -> tuple[int, list[str]]:
    timestamp, signatures = None, []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == SCHEME and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        raise SignatureError(f"the header needs t=<unix time> and {SCHEME}=<hex>: {header!r}")
    return timestamp, signatures
