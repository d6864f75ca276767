"""Who may call the API: staff (researchers and admins), with a personal access token
(`Authorization: Bearer cj_...`, accounts.tokens) or their browser session.

Annotators never reach the API: it shows model identities and jury scores, which blinding
keeps from them, so an annotator's session is refused with 403 on every route (they cannot
have a token; anonymous callers get 401). Routes that change state ask for the role their page
asks for (`admins()`: only admins launch and control runs) and, with a token, its write scope
- before the body is read, so the API never lets anyone do what the site would not. Every
write a token made is recorded in the audit trail once done. A client address that presented
API_TOKEN_FAILURES_PER_MINUTE refused tokens (unknown, revoked, expired) in a minute gets 429
before its tokens are looked up; every refusal is audited. Tokens that work count for nothing
there, so a script's parallel requests are never taken for guesses.
"""

from __future__ import annotations

import functools
import threading

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, Throttled
from ninja.security import HttpBearer, SessionAuth
from ninja.throttling import BaseThrottle

from accounts.access import ADMIN_ONLY, STAFF
from accounts.models import ApiToken, Role, TokenScope
from accounts.tokens import (
    TokenRefused,
    token_authenticate,
    token_refusal_record,
    token_write_record,
)
from api.problems import problem_response
from common.rate_limits import rate_full, rate_take

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
        found = self._live_token(request, token)
        role_check(found.user, self.roles)
        if request.method not in SAFE_METHODS and found.scope != TokenScope.WRITE:
            raise AuthorizationError(
                message=f"Token {found.prefix}… may only read; this needs a read-write token."
            )
        request.user = found.user
        return found

    @staticmethod
    def _live_token(request: HttpRequest, token: str) -> ApiToken:
        """The live token, unless the client's address presented too many refused tokens this
        minute (429: not even looked up). A refusal is counted and audited; past the limit
        one looked up while others were counted is answered 429 too."""
        address = get_client_ip_address(request) or "unknown"
        name, limit = f"api-token-refused:{address}", settings.API_TOKEN_FAILURES_PER_MINUTE
        wait = rate_full(caches["api"], name, limit=limit)
        if wait is not None:
            raise Throttled(wait=wait)
        try:
            return token_authenticate(token)
        except TokenRefused as refusal:
            counted = rate_take(caches["api"], name, limit=limit)
            token_refusal_record(refusal=refusal, address=address, throttled=not counted.allowed)
            if not counted.allowed:
                raise Throttled(wait=counted.wait) from None
            raise AuthenticationError(message=str(refusal)) from None


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


class TokenRateThrottle(BaseThrottle):
    """Each token's own requests per minute (sessions are people at a browser: not limited),
    counted atomically in the shared "api" cache (common.rate_limits), so the limit holds
    across every web process and thread."""

    def __init__(self):
        self._waits = threading.local()  # one instance serves every thread

    def allow_request(self, request: HttpRequest) -> bool:
        token = getattr(request, "auth", None)
        if not isinstance(token, ApiToken):
            return True
        taken = rate_take(
            caches["api"], f"api-token-rate:{token.pk}", limit=token.requests_per_minute
        )
        self._waits.last = taken.wait
        return taken.allowed

    def wait(self) -> float | None:
        return getattr(self._waits, "last", None)


def token_writes_audited(view):
    """Record each write a token made once its route has done it: a write the rate limit, the
    route's own checks or its input refused did nothing, and is not in the trail as one."""

    @functools.wraps(view)
    def audited(request: HttpRequest, *args, **kwargs):
        result = view(request, *args, **kwargs)
        token = getattr(request, "auth", None)
        status = getattr(result, "status_code", 200)
        if isinstance(token, ApiToken) and request.method not in SAFE_METHODS and status < 400:
            token_write_record(
                token=token, method=request.method, path=request.get_full_path(), status=status
            )
        return result

    return audited


def staff() -> list:
    return [PersonalToken(), StaffSession()]


def admins() -> list:
    return [PersonalToken(ADMIN_ONLY), StaffSession(ADMIN_ONLY)]


def docs_access(view):
    """The schema and its docs page, for a script holding a token as for staff at a browser:
    a token is checked as on every route (401 / 403 / 429 as problems); without one, the
    session must be staff's, and an anonymous browser is sent to log in."""

    @functools.wraps(view)
    def checked(request: HttpRequest, *args, **kwargs):
        if request.headers.get("Authorization"):
            try:
                found = PersonalToken()(request)
            except HttpError as error:
                return problem_response(error.status_code, str(error))
            if found is None:
                return problem_response(401, "Send the token as Authorization: Bearer cj_...")
            return view(request, *args, **kwargs)
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.has_role(*STAFF):
            raise PermissionDenied("Your role cannot open this page.")  # the site's 403 page
        return view(request, *args, **kwargs)

    checked.allowed_roles = STAFF
    return checked
