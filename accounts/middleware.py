"""Session rules that depend on who is logged in."""

import time
from collections.abc import Callable
from urllib.parse import urlencode, urlparse

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url

from accounts.models import Role

_REFRESHED = "idle_refreshed_at"
SECONDS_LEFT_HEADER = "X-Session-Expires-In"
ENDED = ("session", "ended")  # the login page's query parameter for "your session ended"


class IdleTimeoutMiddleware:
    """A session ends after a while without a request: ANNOTATOR_IDLE_MINUTES for annotators
    (a shared ward computer must not stay logged in), STAFF_IDLE_MINUTES, longer, for
    researchers and admins (their pages launch runs and export data). Each request starts the
    wait again.

    When an htmx request (an autosave, a heartbeat) arrives after the session ended, following
    the login redirect inside the request would swap the login form into a page fragment.
    Instead the browser is sent to the login page, which returns to the page the person was on;
    their work up to the last autosave is on the server and reappears there (and the review
    screen keeps what was typed after that in the browser and puts it back).

    Every response to a logged-in request says in `X-Session-Expires-In` how many seconds the
    session has left, so the review screen can warn a minute before it ends. A request that
    still carries the cookie of a session that ended is sent to the login page with
    `session=ended`, and the login page says what happened.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            _keep_alive(request.session, idle_minutes(user) * 60)
        response = self.get_response(request)
        if _is_login_redirect(response):
            return _to_login(request, response)
        if request.user.is_authenticated:
            response[SECONDS_LEFT_HEADER] = str(session_seconds_left(request.session))
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


def session_seconds_left(session) -> int:
    """Seconds until the session ends: the expiry is set (and saved) at most once a minute,
    so it runs from that moment, not from this request."""
    now = int(time.time())
    return max(0, session.get(_REFRESHED, now) + session.get_expiry_age() - now)


def _is_login_redirect(response: HttpResponse) -> bool:
    if response.status_code not in (301, 302):
        return False
    return urlparse(response["Location"]).path == resolve_url(settings.LOGIN_URL)


def _to_login(request: HttpRequest, redirect: HttpResponse) -> HttpResponse:
    """The login redirect, marked when a session ended; for htmx, a redirect of the whole page
    back to the page the request came from."""
    ended = dict([ENDED]) if _session_ended(request) else {}
    if not getattr(request, "htmx", False):
        if ended:
            location = redirect["Location"]
            redirect["Location"] = f"{location}{'&' if '?' in location else '?'}{urlencode(ended)}"
        return redirect
    current = request.htmx.current_url_abs_path or "/"
    response = HttpResponse(status=200)
    query = urlencode({"next": current, **ended})
    response["HX-Redirect"] = f"{resolve_url(settings.LOGIN_URL)}?{query}"
    return response


def _session_ended(request: HttpRequest) -> bool:
    """The browser sent a session cookie, but no session goes with it any more: it expired or
    was ended on the server (an explicit logout deletes the cookie)."""
    return bool(request.COOKIES.get(settings.SESSION_COOKIE_NAME)) and (
        request.session.session_key is None
    )
