"""Session rules that depend on who is logged in."""

import time
from collections.abc import Callable
from urllib.parse import urlencode, urlparse

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url

from accounts.models import Role

_REFRESHED = "idle_refreshed_at"


class IdleTimeoutMiddleware:
    """A session ends after a while without a request: ANNOTATOR_IDLE_MINUTES for annotators
    (a shared ward computer must not stay logged in), STAFF_IDLE_MINUTES, longer, for
    researchers and admins (their pages launch runs and export data). Each request starts the
    wait again.

    When an htmx request (an autosave, a heartbeat) arrives after the session ended, following
    the login redirect inside the request would swap the login form into a page fragment.
    Instead the browser is sent to the login page, which returns to the page the person was on;
    their work up to the last autosave is on the server and reappears there.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            _keep_alive(request.session, idle_minutes(user) * 60)
        response = self.get_response(request)
        if getattr(request, "htmx", False) and _is_login_redirect(response):
            return _full_page_login(request)
        return response


def idle_minutes(user) -> int:
    if user.has_role(Role.ANNOTATOR):
        return settings.ANNOTATOR_IDLE_MINUTES
    return settings.STAFF_IDLE_MINUTES


def _keep_alive(session, seconds: int) -> None:
    """Make the session end `seconds` after this request. Saving it is a database write, so
    it is saved at most once a minute (the idle time is kept to the minute): a page polling
    every two seconds must not write on every poll."""
    now = int(time.time())
    if session.get_expiry_age() != seconds or now - session.get(_REFRESHED, 0) >= 60:
        session.set_expiry(seconds)
        session[_REFRESHED] = now


def _is_login_redirect(response: HttpResponse) -> bool:
    if response.status_code not in (301, 302):
        return False
    return urlparse(response["Location"]).path == resolve_url(settings.LOGIN_URL)


def _full_page_login(request: HttpRequest) -> HttpResponse:
    current = request.htmx.current_url_abs_path or "/"
    response = HttpResponse(status=200)
    response["HX-Redirect"] = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': current})}"
    return response
