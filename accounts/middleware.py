"""Session rules that depend on who is logged in."""

import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import urlencode, urlparse

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url

from accounts.models import Role

_ACTED = "idle_acted_at"  # when the person last did something (kept to the minute)
_DEADLINE = "idle_deadline"  # when the session ends if they do nothing more
SECONDS_LEFT_HEADER = "X-Session-Expires-In"
# A request the page sends by itself says how long ago the person last acted in it.
IDLE_SECONDS_HEADER = "X-Idle-Seconds"
# Set by static/js/session.js on every htmx request no person caused (a poll, a load trigger),
# on any page: a live-job page polling every two seconds must not keep its session forever.
SENT_BY_PAGE_HEADER = "X-Sent-By-Page"
# The session's end, kept in the browser past the session itself: once the session is gone,
# it tells an idle logout from a session ended on the server.
DEADLINE_COOKIE = "session_deadline"
SESSION = "session"  # the login page's query parameter for why the session ended
IDLE, ENDED = "idle", "ended"


def sent_by_the_page(view: Callable) -> Callable:
    """Mark a view the page calls on its own (a heartbeat): its requests are not the person's
    activity, so they do not restart the idle wait (see IdleTimeoutMiddleware)."""
    view.sent_by_the_page = True
    return view


class IdleTimeoutMiddleware:
    """A session ends after a while without the person doing anything: ANNOTATOR_IDLE_MINUTES
    for annotators (a shared ward computer must not stay logged in), STAFF_IDLE_MINUTES, longer,
    for researchers and admins (their pages launch runs and export data).

    Only a person's activity restarts the wait: a request they caused (a page, a click, a save).
    A request the page sends by itself (a view marked `sent_by_the_page`, the review screen's
    heartbeat, or any request carrying `X-Sent-By-Page`: the polls of live-job pages) restarts
    it only as of the person's last keystroke or click in the page, which it reports in
    `X-Idle-Seconds`; without that header it restarts nothing. So a page left open logs out on
    time, however often it calls the server.

    When an htmx request (an autosave, a heartbeat) arrives after the session ended, following
    the login redirect inside the request would swap the login form into a page fragment.
    Instead the browser is sent to the login page, which returns to the page the person was on;
    their work up to the last autosave is on the server and reappears there (and the review
    screen keeps what was typed after that in the browser and puts it back).

    The session ends at that time by this middleware's clock (the session store's own expiry
    says the same, to the minute). Every response to a logged-in request says in
    `X-Session-Expires-In` how many seconds the session has left, so the review screen can warn
    a minute before it ends. A request after the session ended is sent to the login page with
    `session=idle` when it ended for lack of activity, `session=ended` when it was ended
    otherwise (deleted on the server, a logout in another window), and the login page says
    which.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        logged_in = user is not None and user.is_authenticated
        if logged_in and session_seconds_left(request.session) <= 0:
            # Past its idle end by this clock, whatever the session store keeps.
            logout(request)
        response = self.get_response(request)
        if _is_login_redirect(response):
            response = _to_login(request, response)
            response.delete_cookie(DEADLINE_COOKIE)  # said once
        elif request.user.is_authenticated:
            response[SECONDS_LEFT_HEADER] = str(session_seconds_left(request.session))
            if getattr(request, "idle_deadline_moved", False):
                _set_deadline_cookie(response, request.session[_DEADLINE])
        elif logged_in:  # logged out by this request: nothing to report next time
            response.delete_cookie(DEADLINE_COOKIE)
        return response

    def process_view(self, request: HttpRequest, view, view_args, view_kwargs) -> None:
        user = request.user
        if user.is_authenticated:
            acted_at = _person_acted_at(request, view)
            request.idle_deadline_moved = _keep_alive(
                request.session, idle_minutes(user) * 60, acted_at
            )


def idle_minutes(user) -> int:
    if user.has_role(Role.ANNOTATOR):
        return settings.ANNOTATOR_IDLE_MINUTES
    return settings.STAFF_IDLE_MINUTES


def _person_acted_at(request: HttpRequest, view) -> float | None:
    """When the person last acted, as far as this request tells: now for a request they
    caused; for one the page sent by itself, what it reports (None: nothing)."""
    now = time.time()
    if not _sent_by_the_page(request, view):
        return now
    reported = request.headers.get(IDLE_SECONDS_HEADER, "")
    if not reported.isdigit():
        return None
    return now - int(reported)


def _sent_by_the_page(request: HttpRequest, view) -> bool:
    # The header can only make a session end sooner, so trusting it gives nobody anything.
    return getattr(view, "sent_by_the_page", False) or SENT_BY_PAGE_HEADER in request.headers


def _keep_alive(session, seconds: int, acted_at: float | None) -> bool:
    """Make the session end `seconds` after the person's last action; whether its end moved.
    Saving the session is a database write, so the action's time is kept to the minute: a
    page polling every two seconds must not write on every poll."""
    now = int(time.time())
    acted = session.get(_ACTED, now)
    if acted_at is not None and acted_at - acted >= 60:
        acted = int(acted_at)
    deadline = acted + seconds
    if session.get(_ACTED) == acted and session.get(_DEADLINE) == deadline:
        return False
    session[_ACTED], session[_DEADLINE] = acted, deadline
    session.set_expiry(datetime.fromtimestamp(deadline, UTC))
    return True


def session_seconds_left(session) -> int:
    """Seconds until the session ends: `seconds` after the person's last action."""
    now = int(time.time())
    return max(0, session.get(_DEADLINE, now + session.get_expiry_age()) - now)


def _set_deadline_cookie(response: HttpResponse, deadline: int) -> None:
    response.set_cookie(
        DEADLINE_COOKIE,
        str(deadline),
        max_age=settings.SESSION_COOKIE_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def _is_login_redirect(response: HttpResponse) -> bool:
    if response.status_code not in (301, 302):
        return False
    return urlparse(response["Location"]).path == resolve_url(settings.LOGIN_URL)


def _to_login(request: HttpRequest, redirect: HttpResponse) -> HttpResponse:
    """The login redirect, saying why a session ended; for htmx, a redirect of the whole page
    back to the page the request came from."""
    reason = _why_it_ended(request)
    ended = {SESSION: reason} if reason else {}
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


def _why_it_ended(request: HttpRequest) -> str:
    """IDLE when the session this browser had has passed its idle end, ENDED when it sent the
    cookie of a session that is gone before its end (deleted on the server), else ""."""
    if request.session.session_key is not None:
        return ""
    deadline = request.COOKIES.get(DEADLINE_COOKIE, "")
    if deadline.isdigit() and int(deadline) <= time.time():
        return IDLE
    return ENDED if request.COOKIES.get(settings.SESSION_COOKIE_NAME) else ""
