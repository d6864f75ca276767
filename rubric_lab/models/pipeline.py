"""Rubric lab data for the knowledge base, the five-stage pipeline and instance-rubric scoring.

A GenerationJob launches the pipeline for one or more conversations with pinned options
(generator model, retriever, ablation flags). Each RubricGeneration is one pipeline execution,
leased like judge calls; every stage it ran is a PipelineStage row holding the prompt, input,
output, tokens, cost and time. An InstanceRubric exists only for a generation whose every stage
succeeded: it is written in one transaction with all its criteria, so there is never half a
rubric. InstanceScore / CriterionDecision hold a judge's per-criterion decisions for one
conversation; they are stored all together or not at all.
"""

from django.conf import settings
from django.db import models

from benchmark.models import Conversation, Run
from jobs.models import BatchMode, Job
from llm.fields import RedactedTextField


class PassageOrigin(models.TextChoices):
    SHIPPED = "shipped", "Shipped corpus"
    UPLOADED = "uploaded", "Uploaded"


class KnowledgeUpload(models.Model):
    """One accepted upload of passages; a rejected upload leaves no row at all."""

    filename = models.CharField(max_length=200)
    passage_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.passage_count} passages)"


class KnowledgePassage(models.Model):
    """One guideline-style passage of the knowledge base, with its source label and version."""

    passage_id = models.SlugField(max_length=80, unique=True)
    topic = models.CharField(max_length=60, db_index=True)
    title = models.CharField(max_length=200)
    text = models.TextField()
    source = models.CharField(max_length=200)
    source_version = models.CharField(max_length=40)
    tags = models.JSONField(default=list, blank=True)
    origin = models.CharField(
        max_length=20, choices=PassageOrigin.choices, default=PassageOrigin.SHIPPED
    )
    upload = models.ForeignKey(
        KnowledgeUpload, null=True, blank=True, on_delete=models.CASCADE, related_name="passages"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["topic", "passage_id"]

    def __str__(self) -> str:
        return self.passage_id


class RetrieverKind(models.TextChoices):
    BM25 = "bm25", "Lexical BM25"
    EMBEDDING = "embedding", "Dense embedding (latent semantic analysis)"


class GenerationMethod(models.TextChoices):
    PIPELINE = "pipeline", "Pipeline (retrieval, evidence, facts, intent, synthesis, audit)"
    DIRECT = "direct", "Direct generation (one model call, the baseline)"


class GenerationJob(Job, BatchMode):
    """One launch of the pipeline over one or more conversations, with pinned options; in
    batch mode its calls go through the providers' batch APIs (rubric_lab.services.
    generation_batches)."""

    name = models.CharField(max_length=200)
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="rubric_jobs"
    )
    generator_model = models.CharField(max_length=200)
    # Scores each generated rubric's own conversation once it exists; blank: no scoring.
    judge_model = models.CharField(max_length=200, blank=True)
    retriever = models.CharField(
        max_length=20, choices=RetrieverKind.choices, default=RetrieverKind.BM25
    )
    top_k = models.PositiveSmallIntegerField(default=4)
    method = models.CharField(
        max_length=20, choices=GenerationMethod.choices, default=GenerationMethod.PIPELINE
    )
    # Ablations: each flag removes one stage of the pipeline.
    skip_routing = models.BooleanField(default=False)
    skip_intent = models.BooleanField(default=False)
    skip_facts = models.BooleanField(default=False)
    skip_audit = models.BooleanField(default=False)
    # The closed audit loop: rounds until one passes the rubric it was given, at most this many.
    audit_rounds = models.PositiveSmallIntegerField(default=3)
    # Per model stage: {"temperature": t, "top_p": p}; a stage left out (or a null value)
    # uses the provider's default.
    sampling = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return self.name

    @property
    def ablations(self) -> list[str]:
        flags = {
            "routing": self.skip_routing,
            "intent": self.skip_intent,
            "facts": self.skip_facts,
            "audit": self.skip_audit,
        }
        return [name for name, skipped in flags.items() if skipped]


class GenerationStatus(models.TextChoices):
    # A generation stays pending while a worker holds its lease (current_stage says how far it
    # got): if that worker dies, the watch sends pending generations again.
    PENDING = "pending", "Pending"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"


class RubricGeneration(models.Model):
    """One pipeline execution for one conversation (one Celery task, leased)."""

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="generations")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="rubric_generations"
    )
    status = models.CharField(
        max_length=20, choices=GenerationStatus.choices, default=GenerationStatus.PENDING
    )
    current_stage = models.CharField(max_length=20, blank=True)
    failed_stage = models.CharField(max_length=20, blank=True)
    failure_reason = RedactedTextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    # Per model called: calls, cached calls, tokens and cost (jobs.services.accounting).
    model_costs = models.JSONField(default=dict, blank=True)
    elapsed_ms = models.FloatField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease (jobs.services.leases), as on judge scores.
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "conversation"], name="unique_generation")
        ]
        indexes = [models.Index(fields=["job", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.job} / {self.conversation_id}"


class StageStatus(models.TextChoices):
    OK = "ok", "Done"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped (ablation)"


class PipelineStage(models.Model):
    """What one stage of one generation asked, received and cost."""

    generation = models.ForeignKey(
        RubricGeneration, on_delete=models.CASCADE, related_name="stages"
    )
    name = models.CharField(max_length=20)
    order = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=20, choices=StageStatus.choices)
    model = models.CharField(max_length=200, blank=True)
    system_prompt = models.TextField(blank=True)
    user_prompt = models.TextField(blank=True)
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(null=True, blank=True)
    attempts = models.JSONField(default=list, blank=True)  # every raw answer and why it failed
    error = RedactedTextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    cached = models.BooleanField(default=False)
    elapsed_ms = models.FloatField(default=0)
    # The sampling this stage asked for (null: the provider's default).
    temperature = models.FloatField(null=True, blank=True)
    top_p = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["generation", "order"]
        constraints = [
            models.UniqueConstraint(fields=["generation", "name"], name="unique_stage_per_run")
        ]

    def __str__(self) -> str:
        return f"{self.generation_id} {self.name}"


class InstanceRubric(models.Model):
    """The final rubric of a generation that succeeded, with the facts and passages behind it."""

    generation = models.OneToOneField(
        RubricGeneration, on_delete=models.CASCADE, related_name="rubric"
    )
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="instance_rubrics"
    )
    # The reference board: [{"id", "text", "passage_ids"}].
    facts = models.JSONField(default=list, blank=True)
    # Passages as they read when the rubric was made: [{"passage_id", "title", "source",
    # "source_version", "text"}], so a later upload cannot change what a criterion cites.
    passages = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Instance rubric #{self.pk} for {self.conversation_id}"


class RubricCriterion(models.Model):
    rubric = models.ForeignKey(InstanceRubric, on_delete=models.CASCADE, related_name="criteria")
    index = models.PositiveSmallIntegerField()
    text = models.TextField()
    axis = models.CharField(max_length=40)
    weight = models.SmallIntegerField()  # [-10, 10], never 0; negative penalises a behaviour
    fact_ids = models.JSONField(default=list, blank=True)
    passage_ids = models.JSONField(default=list, blank=True)
    # Which parts of the interaction intent (urgency, tone, ...) a criterion rests on, for
    # criteria about how to communicate rather than what is medically true.
    intent_basis = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["rubric", "index"]
        constraints = [
            models.UniqueConstraint(fields=["rubric", "index"], name="unique_criterion_index")
        ]

    def __str__(self) -> str:
        return f"[{self.weight:+d}] {self.text[:60]}"

    @property
    def criterion_id(self) -> str:
        return f"c{self.index + 1}"


class InstanceScoreStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    VALID = "valid", "Valid"
    INVALID = "invalid", "Invalid answer"
    ERROR = "error", "Provider error"


class InstanceScore(models.Model):
    """One judge's verdict on one conversation against one instance rubric."""

    rubric = models.ForeignKey(InstanceRubric, on_delete=models.CASCADE, related_name="scores")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="instance_scores"
    )
    judge_model = models.CharField(max_length=200)
    use_cache = models.BooleanField(default=True)
    status = models.CharField(
        max_length=20, choices=InstanceScoreStatus.choices, default=InstanceScoreStatus.PENDING
    )
    weighted_sum = models.IntegerField(null=True, blank=True)
    positive_total = models.PositiveIntegerField(default=0)
    # weighted_sum / positive_total; null when the rubric has no positive weight.
    normalised = models.FloatField(null=True, blank=True)
    failure_reason = RedactedTextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    model_costs = models.JSONField(default=dict, blank=True)  # as on RubricGeneration
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rubric", "conversation", "judge_model"], name="unique_instance_score"
            )
        ]

    def __str__(self) -> str:
        return f"{self.rubric_id} on {self.conversation_id} by {self.judge_model}"


class CriterionDecision(models.Model):
    score = models.ForeignKey(InstanceScore, on_delete=models.CASCADE, related_name="decisions")
    criterion = models.ForeignKey(
        RubricCriterion, on_delete=models.CASCADE, related_name="decisions"
    )
    met = models.BooleanField()
    reason = models.TextField()
    raw_output = RedactedTextField(blank=True)
    attempts = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached = models.BooleanField(default=False)

    class Meta:
        ordering = ["score", "criterion__index"]
        constraints = [
            models.UniqueConstraint(fields=["score", "criterion"], name="unique_decision")
        ]

    def __str__(self) -> str:
        return f"{self.criterion} {'met' if self.met else 'not met'}"
