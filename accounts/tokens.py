"""Personal access tokens for the JSON API: created by staff for themselves, shown once,
stored as a digest, read or read-write, expiring, revocable. Annotators get none: the API
shows what blinding keeps from them."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from accounts.access import STAFF
from accounts.models import ApiToken, User
from audit.services import audit_record

TOKEN_START = "cj_"  # CareJury: a leaked token is recognisable as one of this site's
PREFIX_LENGTH = len(TOKEN_START) + 8
EXPIRY_DAYS = (7, 30, 90, 365)
# Writing last_used_at on every request of a polling script is a write per poll; once a
# minute says all anyone needs ("used today", "never used").
LAST_USED_EVERY = timedelta(minutes=1)


class TokenRefused(Exception):
    """The token cannot be used; the message says why (never which part was wrong). `token`
    is the stored token it matched (revoked, expired...), None for one not known here."""

    def __init__(self, message: str, token: ApiToken | None = None):
        super().__init__(message)
        self.token = token


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(
    *, user: User, name: str, scope: str, days: int, requests_per_minute: int | None = None
) -> tuple[ApiToken, str]:
    """A new token and its text, which is never stored and so can be shown only now."""
    if not user.has_role(*STAFF):
        raise ValidationError("Only researchers and admins can have API tokens.")
    if days not in EXPIRY_DAYS:
        raise ValidationError(f"A token lasts {', '.join(map(str, EXPIRY_DAYS))} days.")
    raw = TOKEN_START + secrets.token_urlsafe(32)
    token = ApiToken(
        user=user,
        name=name.strip(),
        prefix=raw[:PREFIX_LENGTH],
        digest=token_digest(raw),
        scope=scope,
        requests_per_minute=requests_per_minute or settings.API_TOKEN_REQUESTS_PER_MINUTE,
        expires_at=timezone.now() + timedelta(days=days),
    )
    token.full_clean()
    token.save()
    audit_record(
        actor=user,
        action="token.created",
        target=token,
        after={
            "scope": scope,
            "expires_at": token.expires_at.isoformat(),
            "requests_per_minute": token.requests_per_minute,
        },
    )
    return token, raw


def token_revoke(*, token: ApiToken, actor: User) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(actor=actor, action="token.revoked", target=token)
    return token


def token_authenticate(raw: str) -> ApiToken:
    """The live token `raw` is, or TokenRefused saying why it cannot be used."""
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(raw)).first()
    if token is None:
        raise TokenRefused("This token is not known here.")
    now = timezone.now()
    if token.revoked_at is not None:
        raise TokenRefused(f"Token {token.prefix}… was revoked.", token)
    if token.expires_at <= now:
        raise TokenRefused(f"Token {token.prefix}… expired on {token.expires_at:%Y-%m-%d}.", token)
    if not token.user.is_active or not token.user.has_role(*STAFF):
        # A person made an annotator (or deactivated) keeps no API access.
        raise TokenRefused(
            f"Token {token.prefix}… belongs to an account without API access.", token
        )
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def token_write_record(*, token: ApiToken, method: str, path: str, status: int) -> None:
    """Every write a token made is in the audit trail: who, which token, what was done."""
    audit_record(
        actor=token.user,
        action="token.write_used",
        target=token,
        after={"method": method, "path": path, "status": status},
    )


def token_refusal_record(*, refusal: TokenRefused, address: str, throttled: bool) -> None:
    """A refused token (a guess, or one revoked or expired) in the audit trail, with the
    address it came from and whether the answer was 429 (the address's limit was reached).
    Never the text presented: a mistyped password may be in it."""
    audit_record(
        actor=refusal.token.user if refusal.token else None,
        action="token.refused",
        target=refusal.token,
        after={"address": address, "reason": str(refusal), "throttled": throttled},
    )


def tokens_of(user: User):
    return ApiToken.objects.filter(user=user)
