"""Who may call the API: staff (researchers and admins) through their browser session.

Annotators never reach the API: it shows model identities and jury scores, which blinding
keeps from them, so an annotator's session is refused with 403 on every route (anonymous
callers get 401). Routes that change state ask for the role their page asks for (`ADMIN`:
only admins launch and control runs), before the body is read, so the API never lets anyone
do what the site would not.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja.errors import AuthorizationError
from ninja.security import SessionAuth

from accounts.access import ADMIN_ONLY, STAFF
from accounts.models import Role

ANNOTATOR_REFUSAL = "The API shows model identities and jury scores; annotators cannot use it."


def role_check(user, roles: tuple[str, ...]) -> None:
    if user.has_role(Role.ANNOTATOR):
        raise AuthorizationError(message=ANNOTATOR_REFUSAL)
    if not user.has_role(*roles):
        names = " or ".join(f"{role}s" for role in roles)
        raise AuthorizationError(message=f"Only {names} can do this (as on the site's pages).")


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


def staff() -> list:
    return [StaffSession()]


def admins() -> list:
    return [StaffSession(ADMIN_ONLY)]
