"""A researcher's webhooks: register one (its secret shown once), its delivery log, a test
event, turning it back on and deleting it."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from webhooks.forms import WebhookForm
from webhooks.models import DeliveryStatus
from webhooks.services.hooks import (
    webhook_create,
    webhook_delete,
    webhook_enable,
    webhooks_visible,
)
from webhooks.tasks import ping_send

LOG_PAGE = 50


@role_required(*STAFF)
def hooks(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None)
    new_secret, new_hook = "", None
    if request.method == "POST" and form.is_valid():
        new_hook, new_secret = webhook_create(owner=request.user, **form.cleaned_data)
        form = WebhookForm()  # the secret is on this page once; no later page shows it
    context = {
        "form": form,
        "hooks": webhooks_visible(request.user),
        "new_hook": new_hook,
        "new_secret": new_secret,
    }
    return render(request, "webhooks/hooks.html", context)


@role_required(*STAFF)
def hook(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(webhooks_visible(request.user), pk=pk)
    page = Paginator(found.deliveries.all(), LOG_PAGE).get_page(request.GET.get("page"))
    context = {
        "hook": found,
        "page": page,
        "pending": found.deliveries.filter(status=DeliveryStatus.PENDING).exists(),
        "max_attempts": settings.WEBHOOK_MAX_ATTEMPTS,
    }
    if request.htmx:
        return render(request, "webhooks/hook.html#delivery-log", context)
    return render(request, "webhooks/hook.html", context)


@role_required(*STAFF)
@require_POST
def hook_test(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(webhooks_visible(request.user), pk=pk)
    ping_send(found)
    messages.success(request, "A test event is on its way; its attempt appears in the log below.")
    return redirect("webhooks:hook", pk=found.pk)


@role_required(*STAFF)
@require_POST
def hook_enable(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(webhooks_visible(request.user), pk=pk)
    webhook_enable(found, actor=request.user)
    messages.success(request, "The webhook is on again: the next job's end is delivered to it.")
    return redirect("webhooks:hook", pk=found.pk)


@role_required(*STAFF)
@require_POST
def hook_delete(request: HttpRequest, pk: int) -> HttpResponse:
    found = get_object_or_404(webhooks_visible(request.user), pk=pk)
    webhook_delete(found, actor=request.user)
    messages.success(request, f"Deleted the webhook to {found.url} and its delivery log.")
    return redirect("webhooks:hooks")
