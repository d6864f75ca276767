"""Who may call the API: staff (researchers and admins), with a personal access token
(`Authorization: Bearer cj_...`, accounts.tokens) or their browser session.

Annotators never reach the API: it shows model identities and jury scores, which blinding
keeps from them, so an annotator's session is refused with 403 on every route (they cannot
have a token; anonymous callers get 401). Routes that change state ask for the role their page
asks for (`admins()`: only admins launch and control runs) and, with a token, its write scope
- before the body is read, so the API never lets anyone do what the site would not. Every
request a write scope allows is recorded in the audit trail.
"""

from __future__ import annotations

from django.core.cache import caches
from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError
from ninja.security import HttpBearer, SessionAuth
from ninja.throttling import SimpleRateThrottle

from accounts.access import ADMIN_ONLY, STAFF
from accounts.models import ApiToken, Role, TokenScope
from accounts.tokens import TokenRefused, token_authenticate, token_write_record

ANNOTATOR_REFUSAL = "The API shows model identities and jury scores; annotators cannot use it."
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def role_check(user, roles: tuple[str, ...]) -> None:
    if user.has_role(Role.ANNOTATOR):
        raise AuthorizationError(message=ANNOTATOR_REFUSAL)
    if not user.has_role(*roles):
        names = " or ".join(f"{role}s" for role in roles)
        raise AuthorizationError(message=f"Only {names} can do this (as on the site's pages).")


class PersonalToken(HttpBearer):
    """`Authorization: Bearer <token>`: the token's owner becomes `request.user`, so services,
    downloads and the audit trail name the person as they do for a page."""

    def __init__(self, roles: tuple[str, ...] = STAFF):
        super().__init__()
        self.roles = roles

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        try:
            found = token_authenticate(token)
        except TokenRefused as refusal:
            raise AuthenticationError(message=str(refusal)) from None
        role_check(found.user, self.roles)
        if request.method not in SAFE_METHODS:
            if found.scope != TokenScope.WRITE:
                raise AuthorizationError(
                    message=f"Token {found.prefix}… may only read; this needs a read-write token."
                )
            token_write_record(token=found, method=request.method, path=request.get_full_path())
        request.user = found.user
        return found


class StaffSession(SessionAuth):
    """The logged-in staff member's session (with Django's CSRF check on writes)."""

    def __init__(self, roles: tuple[str, ...] = STAFF):
        super().__init__()
        self.roles = roles

    def authenticate(self, request: HttpRequest, key: str | None):
        user = request.user
        if not user.is_authenticated:
            return None
        role_check(user, self.roles)
        return user


class TokenRateThrottle(SimpleRateThrottle):
    """Each token's own requests per minute (sessions are people at a browser: not limited).
    The counts are in the shared "api" cache, so every web process counts alike."""

    @property
    def cache(self):  # looked up when used: tests swap the configured caches
        return caches["api"]

    def __init__(self):
        super().__init__(rate="1/m")  # replaced per request by the token's own rate

    def allow_request(self, request: HttpRequest) -> bool:
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return True
        self.num_requests, self.duration = token.requests_per_minute, 60
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str:
        return f"api-token-rate:{request.auth.pk}"


def staff() -> list:
    return [PersonalToken(), StaffSession()]


def admins() -> list:
    return [PersonalToken(ADMIN_ONLY), StaffSession(ADMIN_ONLY)]
