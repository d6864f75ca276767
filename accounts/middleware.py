"""Session rules that depend on who is logged in."""

from collections.abc import Callable
from urllib.parse import urlencode, urlparse

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url

from accounts.models import Role


class AnnotatorIdleTimeoutMiddleware:
    """An annotator's session ends after ANNOTATOR_IDLE_MINUTES without a request (a shared
    ward computer must not stay logged in); staff sessions keep the default lifetime.

    When an htmx request (an autosave, a heartbeat) arrives after the session ended, following
    the login redirect inside the request would swap the login form into a page fragment.
    Instead the browser is sent to the login page, which returns to the page the person was on;
    their work up to the last autosave is on the server and reappears there.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and user.has_role(Role.ANNOTATOR):
            request.session.set_expiry(settings.ANNOTATOR_IDLE_MINUTES * 60)
        response = self.get_response(request)
        if getattr(request, "htmx", False) and _is_login_redirect(response):
            return _full_page_login(request)
        return response


def _is_login_redirect(response: HttpResponse) -> bool:
    if response.status_code not in (301, 302):
        return False
    return urlparse(response["Location"]).path == resolve_url(settings.LOGIN_URL)


def _full_page_login(request: HttpRequest) -> HttpResponse:
    current = request.htmx.current_url_abs_path or "/"
    response = HttpResponse(status=200)
    response["HX-Redirect"] = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': current})}"
    return response
