"""Jury data: rubric versions, jury configurations, scoring jobs, judge scores and merged results.

Every score points at the rubric version that produced it; editing a rubric creates a new
version and never changes what older scores point at.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from benchmark.models import Conversation, Run
from jobs.models import BatchMode, Job, ProviderRetries
from jury.engine.calibration import Calibration
from llm.fields import RedactedTextField


class RubricVersion(models.Model):
    rubric_id = models.SlugField(max_length=60)
    version = models.PositiveIntegerField()
    name = models.CharField(max_length=120)
    code = models.CharField(max_length=8)
    kind = models.CharField(max_length=20)  # dimension (judged) or realism (clinicians only)
    track = models.CharField(max_length=20, blank=True)
    order = models.PositiveSmallIntegerField(default=0)
    yaml_text = models.TextField()
    fingerprint = models.CharField(max_length=64)
    is_current = models.BooleanField(default=True)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["order", "rubric_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["rubric_id", "version"], name="unique_rubric_version"),
            models.UniqueConstraint(
                fields=["rubric_id"], condition=Q(is_current=True), name="one_current_version"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class MergeMode(models.TextChoices):
    MEAN = "mean", "Mean score (pass when the jury mean >= threshold)"
    MAJORITY = "majority", "Majority vote on pass/fail"


# How pages name a calibration's parts (jury.engine.calibration.PARTS).
PART_NAMES = {
    "examples": "examples",
    "judge_maps": "judge maps",
    "weights": "judge weights",
    "aggregate_map": "aggregate map",
}


class Jury(models.Model):
    name = models.CharField(max_length=200, unique=True)
    judges = models.JSONField(help_text="model strings, one per judge")
    weights = models.JSONField(help_text="rubric id -> weight")
    pass_threshold = models.FloatField(default=3.0)
    merge_mode = models.CharField(max_length=20, choices=MergeMode.choices, default=MergeMode.MEAN)
    created_at = models.DateTimeField(auto_now_add=True)
    # Versions: a jury calibrated to clinicians is a new Jury row (so every scoring job, report
    # and export names the version that scored it) whose `base` is the first version.
    base = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="versions"
    )
    version = models.PositiveSmallIntegerField(default=1)
    # jury.engine.calibration.Calibration.to_dict(): judge maps, weights, aggregate maps and
    # prompt examples per rubric; {} for an uncalibrated jury.
    calibration = models.JSONField(default=dict, blank=True)
    # Where the calibration was learned: {"study_id", "study_name", "variant", "items": [the
    # conversation ids whose clinician scores it saw], "n_ratings", "fitted_at",
    # "purpose": "promoted" | "fold"}. A fold jury (version FOLD_VERSION) scores one
    # cross-fitting fold and is never offered for a run.
    learned_from = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "juries"

    def __str__(self) -> str:
        return self.name

    @property
    def is_calibrated(self) -> bool:
        return bool(self.calibration)

    # A fold jury takes no version number: version 0 is what marks it, everywhere.
    FOLD_VERSION = 0

    @property
    def is_fold(self) -> bool:
        return self.version == self.FOLD_VERSION

    @property
    def learned_items(self) -> frozenset[int]:
        """Conversations whose clinician scores this jury learned from: agreement figures
        leave them out by default, since the jury has seen their answers."""
        return frozenset(int(item) for item in self.learned_from.get("items", ()))

    def calibration_data(self) -> Calibration:
        return Calibration.from_dict(self.calibration)

    @property
    def calibration_parts(self) -> str:
        """The calibrated parts, named for people ("judge maps, examples"; "" for none)."""
        return ", ".join(PART_NAMES[part] for part in self.calibration_data().parts)

    @property
    def calibration_summary(self) -> str:
        """What was calibrated and from where, for every page and export that names the jury
        ("" for an uncalibrated jury): "calibrated (judge maps, judge weights) from study
        Pilot, 120 conversations"."""
        if not self.is_calibrated:
            return ""
        parts = self.calibration_parts
        learned = self.learned_from
        source = f" from study {learned['study_name']}" if learned.get("study_name") else ""
        items = len(learned.get("items") or ())
        count = f", {items} conversation{'s' if items != 1 else ''}" if items else ""
        return f"calibrated ({parts}){source}{count}"

    @property
    def described(self) -> str:
        """The name, and for a calibrated jury what it learned from (reports, exports)."""
        summary = self.calibration_summary
        return f"{self.name}, {summary}" if summary else self.name


class ScoringJob(Job, BatchMode):
    """One jury scoring one run with pinned rubric versions.

    A re-score (alignment: a study's annotated conversations judged by another configuration)
    is restricted to a set of the run's conversations and may carry its own judge prompt.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="scoring_jobs")
    jury = models.ForeignKey(Jury, on_delete=models.PROTECT, related_name="jobs")
    rubric_versions = models.ManyToManyField(RubricVersion, related_name="jobs")
    # Empty: every scorable conversation of the run; otherwise only these.
    conversations = models.ManyToManyField(
        Conversation, blank=True, related_name="restricted_scoring_jobs"
    )
    # The judge prompt template text (jury.engine.prompt format); blank: the shipped file.
    judge_template = models.TextField(blank=True)
    # Judge calls sent to the workers at once; the rest wait in the database, so a lost call is
    # found and sent again within one lease instead of after a queue of thousands drains.
    # (A failed job failed because no judge call gave a valid score: failure_reason.)
    concurrency = models.PositiveIntegerField(default=64)

    def __str__(self) -> str:
        return f"{self.jury} on {self.run}"


class ScoreStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    VALID = "valid", "Valid"
    INVALID = "invalid", "Invalid answer"
    ERROR = "error", "Provider error"


class JudgeScore(ProviderRetries):
    """One judge's answer for one (conversation, rubric). Invalid answers never carry a score.

    Retry counts, like tokens, add up over every attempt, failed calls included."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="scores")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="judge_scores"
    )
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT)
    judge_index = models.PositiveSmallIntegerField()
    judge_model = models.CharField(max_length=200)
    status = models.CharField(
        max_length=20, choices=ScoreStatus.choices, default=ScoreStatus.PENDING
    )
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    explanation = models.TextField(blank=True)
    raw_output = RedactedTextField(blank=True)
    invalid_reason = models.CharField(max_length=40, blank=True)
    error = RedactedTextField(blank=True)
    attempts = models.JSONField(default=list, blank=True)  # every raw answer and why it failed
    prompt_hash = models.CharField(max_length=64, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    # Of input_tokens: read from the provider's prompt cache / written to it (each billed at
    # its own price), and what the calls would have cost with no prompt caching.
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    list_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached = models.BooleanField(default=False)
    # Model calls made for this score (repair turns and retries included), and how many of
    # them the response cache answered.
    calls = models.PositiveIntegerField(default=0)
    cached_calls = models.PositiveIntegerField(default=0)
    # Of those calls, the ones a repair turn asked for (the answer before did not fit).
    repairs = models.PositiveIntegerField(default=0)
    # The lease (jobs.services.leases): set when the task is sent and again when a worker
    # takes it, so a duplicate delivery does nothing and a lost task is sent again once the
    # lease runs out. Only the message carrying the current token may claim the row.
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "conversation", "rubric_version", "judge_index"],
                name="unique_judge_task",
            )
        ]
        indexes = [models.Index(fields=["job", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} {self.rubric_version} judge {self.judge_index}"


class RubricResult(models.Model):
    """The jury's merged result for one (conversation, rubric) once all K judges are valid."""

    job = models.ForeignKey(ScoringJob, on_delete=models.CASCADE, related_name="rubric_results")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="rubric_results"
    )
    rubric_id = models.SlugField(max_length=60)
    mean = models.FloatField()
    sd = models.FloatField()
    passed = models.BooleanField()
    pass_agreement = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "conversation", "rubric_id"], name="unique_rubric_result"
            )
        ]
        indexes = [models.Index(fields=["job", "rubric_id", "mean"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} {self.rubric_id} {self.mean:.2f}"


class ConversationResult(models.Model):
    """Per conversation: complete or not, jury aggregate, each judge's aggregate, and the
    objective outcome checks (jury.engine.outcomes), which need no judge at all."""

    job = models.ForeignKey(
        ScoringJob, on_delete=models.CASCADE, related_name="conversation_results"
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="jury_results"
    )
    complete = models.BooleanField(default=False)
    missing = models.JSONField(default=list, blank=True)  # rubric ids lacking K valid scores
    aggregate = models.FloatField(null=True, blank=True)
    judge_aggregates = models.JSONField(default=dict, blank=True)  # judge model -> aggregate
    booked = models.BooleanField(default=False)
    booked_type_matches = models.BooleanField(null=True)
    fabricated_claims = models.JSONField(default=list, blank=True)  # claimed tools, unbacked
    fabricated_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "conversation"], name="unique_conv_result")
        ]
        indexes = [models.Index(fields=["job", "complete"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} aggregate {self.aggregate}"
