"""Query parameters: every filter, pager, flag and fragment a page reads from its query string
is read through here. A value that cannot be used answers 400 with a message naming the
parameter, the value and what it may be - never a 500 from deep inside a query, never a filter
silently dropped. Blank or absent means "not set" (the default), as an empty select sends it.

Values are cleaned by Django's form fields (their messages included); `bad_request` renders
the site's 400 page with the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import BadRequest, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.csrf import requires_csrf_token

# Longer lists of choices are summarised in the message instead of listed.
CHOICES_LISTED = 12


class BadQuery(BadRequest):
    """A query parameter that cannot be used; the message is written for people."""

    def __init__(self, name: str, value: str, reason: str):
        super().__init__(f'The address sets "{name}" to "{value}", which cannot be used: {reason}')
        self.name, self.value, self.reason = name, value, reason


def query_value(params: QueryDict, name: str, field: forms.Field, default: Any = None) -> Any:
    """`name` cleaned by the form field, or `default` when absent or blank."""
    raw = params.get(name, "")
    if raw.strip() == "":
        return default
    try:
        return field.clean(raw)
    except ValidationError as error:
        raise BadQuery(name, raw, " ".join(error.messages)) from None


def query_choice(params: QueryDict, name: str, choices: Iterable[Any], default: str = "") -> str:
    """One of `choices` (compared as text), or `default` when absent or blank."""
    allowed = [str(choice) for choice in choices]
    raw = params.get(name, "")
    if raw == "":
        return default
    if raw not in allowed:
        raise BadQuery(name, raw, _expected(allowed))
    return raw


def query_flag(params: QueryDict, name: str, *, on: str, off: str = "") -> bool:
    """Whether a yes/no parameter is `on`; `off` (or nothing) means no."""
    return query_choice(params, name, [on, off] if off else [on]) == on


def query_int(
    params: QueryDict,
    name: str,
    *,
    default: int | None = None,
    min_value: int | None = None,
    max_value: int | None = None,
) -> int | None:
    field = forms.IntegerField(min_value=min_value, max_value=max_value)
    return query_value(params, name, field, default)


def query_number(
    params: QueryDict,
    name: str,
    *,
    default: float | None = None,
    min_value: float | None = None,
    max_value: float | None = None,
) -> float | None:
    field = forms.FloatField(min_value=min_value, max_value=max_value)
    return query_value(params, name, field, default)


def query_object(params: QueryDict, name: str, queryset: QuerySet) -> Model | None:
    """The row of `queryset` whose id the parameter gives, or None when it is not set."""
    pk = query_int(params, name, min_value=1)
    if pk is None:
        return None
    found = queryset.filter(pk=pk).first()
    if found is None:
        raise BadQuery(name, params[name], f"there is no such {queryset.model._meta.verbose_name}.")
    return found


def query_page(params: QueryDict, paginator: Paginator) -> Page:
    """The page `?page=` asks for (the first when not set). A number past the end gives the
    last page: a live list polled on its last page may have grown shorter meanwhile."""
    number = query_int(params, "page", default=1, min_value=1)
    return paginator.get_page(number)


def query_form_check(form: forms.Form) -> None:
    """A form filled from the query string (a search) must be valid, or the request is bad."""
    if form.is_bound and not form.is_valid():
        name, messages = next(iter(form.errors.items()))
        raise BadQuery(name, form.data.get(name, ""), " ".join(messages))


def _expected(allowed: list[str]) -> str:
    if not allowed:
        return "nothing can be chosen here yet."
    if len(allowed) > CHOICES_LISTED:
        return f"it is not one of the {len(allowed)} values offered here."
    return "it must be one of " + ", ".join(f'"{choice}"' for choice in allowed) + "."


@requires_csrf_token
def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: the site's 400 page, with the reason when it is one written for people (a
    BadQuery); other refusals (an upload too large, a malformed request) keep the general
    text, since their messages are not written for the person reading."""
    context = {
        "message": str(exception) if isinstance(exception, BadQuery) else "",
        "upload_limit_mb": settings.UPLOAD_LIMIT_MB,
    }
    return render(request, "400.html", context, status=400)
