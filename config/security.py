"""Security headers Django 5.2 does not set by itself.

Cache-Control: no-store on every response to a logged-in request (pages, htmx fragments,
exports and downloads): a shared ward computer's browser, or a proxy, must not keep a copy of
traces, scores or annotations after the session ended. Static files are served before this
middleware (WhiteNoise) and stay cacheable.

Content-Security-Policy: every script is a vendored file served from our own static folder
(htmx, the review screen's keyboard script), so no inline script and no eval is ever allowed;
a script injected through user or model text could not run even if escaping failed. Inline
style attributes stay allowed: progress bars set their width with one.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers


def content_security_policy(*, sign_on_origin: str = "") -> str:
    """The policy; with a sign-on, forms may also lead to the identity provider (the sign-on
    button and the logout post here and are redirected there, and browsers hold redirects after
    a form to form-action)."""
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            f"form-action 'self'{f' {sign_on_origin}' if sign_on_origin else ''}",
            "frame-ancestors 'none'",
        ]
    )


CONTENT_SECURITY_POLICY = content_security_policy()
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=(), usb=()"


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response


class NoStoreForLoggedInMiddleware:
    """After the authentication middleware: the response to a logged-in request is never
    stored (Django's never-cache headers: no-store, no-cache, must-revalidate, private)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.user.is_authenticated:
            add_never_cache_headers(response)
        return response
