"""Two factors: a code from an authenticator app (TOTP) with recovery codes, by django-allauth's
MFA app. Anyone may set it up on *Two factors*; the roles in TWO_FACTOR_REQUIRED_ROLES
(researchers and admins in production) must, before any other page, and cannot remove it.

Once set up, every login asks for a code after the password or the sign-on (allauth's login
stage). The idle rules are untouched: a session that ends for inactivity asks for both again.
"""

from collections.abc import Callable

from allauth.mfa.adapter import DefaultMFAAdapter
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

_SET_UP = "two_factor_set_up"  # the user id whose authenticator app was found (one query)
# Pages a person who must set up a second factor can still reach: the set-up itself, logging
# in and out, and the review screen's keep-alive (its answer must stay a 204).
_OPEN_PREFIXES = ("/accounts/2fa/", "/accounts/login/", "/accounts/logout/", "/accounts/reauth")
_OPEN_NAMES = ("session_keepalive",)


def two_factor_required(user) -> bool:
    return user.is_authenticated and user.role in settings.TWO_FACTOR_REQUIRED_ROLES


def has_authenticator_app(user) -> bool:
    return Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists()


class TwoFactorAdapter(DefaultMFAAdapter):
    def can_delete_authenticator(self, authenticator: Authenticator) -> bool:
        # Recovery codes may be regenerated; the app itself stays for those who need it.
        if authenticator.type != Authenticator.Type.TOTP:
            return True
        return not two_factor_required(authenticator.user)


class TwoFactorRequiredMiddleware:
    """Sends a person whose role needs a second factor, and has none yet, to its set-up page
    (an htmx request: the whole page, as the idle middleware does)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.static_url = "/" + settings.STATIC_URL.lstrip("/")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        if two_factor_required(user) and not self._open(request) and not self._set_up(request):
            setup = reverse("mfa_activate_totp")
            if getattr(request, "htmx", False):
                return HttpResponse(status=200, headers={"HX-Redirect": setup})
            return redirect(setup)
        return self.get_response(request)

    def _open(self, request: HttpRequest) -> bool:
        open_paths = (*_OPEN_PREFIXES, self.static_url, *(reverse(n) for n in _OPEN_NAMES))
        return request.path.startswith(open_paths)

    def _set_up(self, request: HttpRequest) -> bool:
        if request.session.get(_SET_UP) == request.user.pk:
            return True
        if not has_authenticator_app(request.user):
            return False
        request.session[_SET_UP] = request.user.pk
        return True
