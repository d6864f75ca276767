"""Old addresses of pages that moved: they send the browser on to the page's new address."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse


class _MethodKeepingRedirect(HttpResponseRedirect):
    status_code = 307  # a POST stays a POST, with its body (a plain 302 would turn it into a GET)


def moved_to(pattern_name: str) -> Callable[..., HttpResponse]:
    """A view for an old URL pattern: the same keyword arguments and query string, the new
    address. GET and HEAD get a plain redirect; other methods keep their method and body."""

    def moved(request: HttpRequest, **kwargs) -> HttpResponse:
        url = reverse(pattern_name, kwargs=kwargs)
        if request.META.get("QUERY_STRING"):
            url = f"{url}?{request.META['QUERY_STRING']}"
        if request.method in {"GET", "HEAD"}:
            return HttpResponseRedirect(url)
        return _MethodKeepingRedirect(url)

    moved.moved_to = pattern_name
    return moved
