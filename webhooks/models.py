"""A researcher's webhook (a URL and the secret its requests are signed with) and the
delivery log: one row per event and hook, kept with what the receiver answered."""

import uuid

from django.conf import settings
from django.db import models

from llm.fields import RedactedTextField


class Webhook(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    # Needed in clear to sign every request; shown to its owner once, when the hook is made.
    secret = models.CharField(max_length=100)
    active = models.BooleanField(default=True)
    # Deliveries that failed in a row (every attempt): past WEBHOOK_DISABLE_AFTER the hook is
    # turned off with the reason; a delivery that succeeds sets it back to 0.
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"  # waiting for its first attempt or its next
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"  # every attempt failed, or the hook was turned off meanwhile


class WebhookDelivery(models.Model):
    """One event for one hook. Written in the transaction that ended the job, sent by a
    worker afterwards; its body is written at the first attempt and the same bytes are sent
    at every retry (each attempt signed anew with its own time)."""

    hook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(default=uuid.uuid4, editable=False)  # the receiver's dedup key
    event = models.CharField(max_length=30)  # job.finished, job.failed, batch.ended, ping
    job_kind = models.CharField(max_length=60, blank=True)  # "benchmark.run", ...
    job_id = models.PositiveBigIntegerField(null=True, blank=True)
    job_status = models.CharField(max_length=20, blank=True)
    body = models.TextField(blank=True)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # A sender holds the row until then; a row whose sender died is sent again after it.
    claimed_until = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    error = RedactedTextField(blank=True)  # why the last attempt failed, in words
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event} to hook {self.hook_id} ({self.status})"
