"""Fidelity reviews: a reviewer model reading a run's conversations for the simulated patient's
errors (fidelity.engine), one leased unit per conversation."""

from django.db import models

from benchmark.models import Conversation, Run
from jobs.models import Job
from llm.fields import RedactedTextField


class FidelityReview(Job):
    """One reviewer model over the scorable conversations of one run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="fidelity_reviews")
    reviewer_model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=80)

    def __str__(self) -> str:
        return f"fidelity review of {self.run} by {self.reviewer_model}"


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ConversationReviewQuerySet(models.QuerySet):
    def flagged(self):
        return self.filter(status=ReviewStatus.DONE, flagged=True)


class ConversationReview(models.Model):
    """The reviewer's findings on one conversation: [{kind, event, quote, explanation}]. A
    failed review (provider fault, answer unusable after repair) has no verdict, never an
    empty list."""

    review = models.ForeignKey(
        FidelityReview, on_delete=models.CASCADE, related_name="conversation_reviews"
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="fidelity_reviews"
    )
    status = models.CharField(
        max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.PENDING
    )
    findings = models.JSONField(default=list, blank=True)
    flagged = models.BooleanField(null=True)
    raw_output = RedactedTextField(blank=True)
    failure_reason = RedactedTextField(blank=True)
    # What its calls cost, over every attempt (jobs.services.accounting.spend_added).
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    model_costs = models.JSONField(default=dict, blank=True)
    # The lease (jobs.services.leases): only the message with the current token may claim it.
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ConversationReviewQuerySet.as_manager()

    class Meta:
        ordering = ["review", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["review", "conversation"], name="unique_conversation_review"
            )
        ]
        indexes = [models.Index(fields=["review", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"review of {self.conversation_id}"
