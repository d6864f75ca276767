"""Webhooks as JSON: list, register (the secret is in the answer once), delete, the delivery
log, and a test event. The pages' form and services, so the rules are the page's."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status
from pydantic import Field

from api.forms import form_checked
from api.problems import responses
from webhooks.forms import WebhookForm
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services.hooks import webhook_create, webhook_delete, webhooks_visible
from webhooks.tasks import ping_send

router = Router(tags=["webhooks"])

MAX_LOG_ROWS = 500


class WebhookIn(Schema):
    url: str
    description: str = ""


class WebhookOut(Schema):
    id: int
    url: str
    description: str
    owner: str
    active: bool
    consecutive_failures: int
    disabled_reason: str
    created_at: datetime


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(description="Signs every request to the URL; shown this once only")


class DeliveryOut(Schema):
    id: int
    event_id: UUID
    event: str
    job_kind: str
    job_id: int | None
    job_status: str
    status: str
    attempts: int
    response_status: int | None
    response_excerpt: str
    error: str
    next_attempt_at: datetime | None = Field(description="While pending: the next attempt")
    created_at: datetime
    delivered_at: datetime | None


def webhook_out(hook: Webhook) -> dict:
    return {
        "id": hook.pk,
        "url": hook.url,
        "description": hook.description,
        "owner": hook.owner.username,
        "active": hook.active,
        "consecutive_failures": hook.consecutive_failures,
        "disabled_reason": hook.disabled_reason,
        "created_at": hook.created_at,
    }


def delivery_out(delivery: WebhookDelivery) -> dict:
    return {
        "id": delivery.pk,
        "event_id": str(delivery.event_id),
        "event": delivery.event,
        "job_kind": delivery.job_kind,
        "job_id": delivery.job_id,
        "job_status": delivery.job_status,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "response_status": delivery.response_status,
        "response_excerpt": delivery.response_excerpt,
        "error": delivery.error,
        "next_attempt_at": delivery.next_attempt_at if delivery.status == "pending" else None,
        "created_at": delivery.created_at,
        "delivered_at": delivery.delivered_at,
    }


@router.get("/webhooks", response=responses({200: list[WebhookOut]}), url_name="webhooks")
def webhooks(request: HttpRequest):
    """Your webhooks (an admin's answer holds everybody's)."""
    return [webhook_out(hook) for hook in webhooks_visible(request.user)]


@router.post(
    "/webhooks", response=responses({201: WebhookCreatedOut}, 400), url_name="webhook_create"
)
def webhook_new(request: HttpRequest, payload: WebhookIn):
    """Register a URL (http or https). The answer's `secret` signs every request to it and is
    never shown again: keep it where the receiver can read it."""
    form = form_checked(WebhookForm, payload.dict())
    hook, secret = webhook_create(owner=request.user, **form.cleaned_data)
    return Status(201, webhook_out(hook) | {"secret": secret})


@router.get("/webhooks/{hook_id}", response=responses({200: WebhookOut}, 404), url_name="webhook")
def webhook(request: HttpRequest, hook_id: int):
    return webhook_out(get_object_or_404(webhooks_visible(request.user), pk=hook_id))


@router.delete(
    "/webhooks/{hook_id}", response=responses({204: None}, 404), url_name="webhook_delete"
)
def webhook_remove(request: HttpRequest, hook_id: int):
    """Delete the webhook and its delivery log."""
    hook = get_object_or_404(webhooks_visible(request.user), pk=hook_id)
    webhook_delete(hook, actor=request.user)
    return Status(204, None)


@router.get(
    "/webhooks/{hook_id}/deliveries",
    response=responses({200: list[DeliveryOut]}, 400, 404),
    url_name="webhook_deliveries",
)
def webhook_deliveries(request: HttpRequest, hook_id: int, limit: int = 50):
    """The delivery log, newest first: state, attempts, the receiver's last answer and, while
    pending, when the next attempt is due."""
    hook = get_object_or_404(webhooks_visible(request.user), pk=hook_id)
    limit = max(1, min(limit, MAX_LOG_ROWS))
    return [delivery_out(row) for row in hook.deliveries.all()[:limit]]


@router.post(
    "/webhooks/{hook_id}/test", response=responses({200: DeliveryOut}, 404), url_name="webhook_test"
)
def webhook_test(request: HttpRequest, hook_id: int):
    """Send a `ping` event now (one attempt, even to a webhook that is off); poll the
    deliveries for its outcome."""
    hook = get_object_or_404(webhooks_visible(request.user), pk=hook_id)
    return delivery_out(ping_send(hook))
