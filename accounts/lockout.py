"""Login throttling on two limits, and the page a locked-out login gets.

django-axes counts wrong passwords per (username, address): AXES_FAILURE_LIMIT of them lock
that pair, so a guesser is slowed down and a colleague on the same network keeps working. One
address trying one password on many usernames never repeats a pair, so it needs a second,
higher limit on the address alone: LOGIN_ADDRESS_FAILURE_LIMIT wrong passwords from one
address, whatever the usernames, within the same lockout window lock the address.

django-axes can count several parameter combinations (AXES_LOCKOUT_PARAMETERS) but compares
them all with one limit, so the second limit is the smallest extension of its database
handler: the address's failures, over the address limit, count as reaching the pair limit.
"""

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LoginThrottle(AxesDatabaseHandler):
    """settings.AXES_HANDLER: django-axes' database handler with the per-address limit."""

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        failures = super().get_failures(request, credentials)
        if address_locked(request):
            return max(failures, get_failure_limit(request, credentials))
        return failures


def address_failures(request: HttpRequest) -> int:
    """Wrong passwords from the request's address, for any username, within the window."""
    recent = AccessAttempt.objects.filter(
        ip_address=request.axes_ip_address, attempt_time__gte=get_cool_off_threshold(request)
    )
    return recent.aggregate(total=Sum("failures_since_start"))["total"] or 0


def address_locked(request: HttpRequest) -> bool:
    return address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT


def lockout_response(
    request: HttpRequest, original_response=None, credentials=None
) -> HttpResponse:
    """settings.AXES_LOCKOUT_CALLABLE: the site's page instead of django-axes' plain text."""
    by_address = address_locked(request)
    context = {
        "by_address": by_address,
        "failure_limit": (
            settings.LOGIN_ADDRESS_FAILURE_LIMIT if by_address else settings.AXES_FAILURE_LIMIT
        ),
        "minutes": settings.LOGIN_LOCKOUT_MINUTES,
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
    }
    return render(request, "registration/locked.html", context, status=429)
