"""The page a locked-out login gets (django-axes calls this instead of its plain text)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def lockout_response(
    request: HttpRequest, original_response=None, credentials=None
) -> HttpResponse:
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": settings.LOGIN_LOCKOUT_MINUTES,
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
    }
    return render(request, "registration/locked.html", context, status=429)
