"""Rubric lab data for evaluating judges and rubrics: near-miss sensitivity studies, coverage of
expert criteria (CIA), critique-then-refine and one-click ablations.

Every unit of work (a near-miss pair, a coverage case, a refinement) is one leased row, like a
judge call: sent to the workers a window at a time, re-sent by the watch when its worker dies,
and finished with its outcome or a failure reason - never half stored.
"""

from django.conf import settings
from django.db import models

from benchmark.models import BenchmarkEntry, BenchmarkSet, Conversation, Run
from jobs.models import BatchMode, Job, JobStatus
from llm.fields import RedactedTextField
from rubric_lab.models.pipeline import GenerationJob, InstanceRubric

__all__ = [
    "AblationArm",
    "AblationStudy",
    "AblationVariant",
    "CoverageCase",
    "CoverageRun",
    "ExpertCriteriaUpload",
    "ExpertCriterion",
    "JudgeSetup",
    "NearMiss",
    "NearMissStatus",
    "RefineArm",
    "RefineStudy",
    "Refinement",
    "SensitivityStudy",
    "WorkStatus",
]


class LeasedWork(models.Model):
    """A row workers execute: its lease (jobs.services.leases) and what it cost."""

    failure_reason = RedactedTextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    # Per model called: calls, cached calls, tokens and cost (jobs.services.accounting).
    model_costs = models.JSONField(default=dict, blank=True)
    # Batch mode: the keys of the batch answers already priced on this unit, so an answer
    # recorded twice (a poller that died mid-way) is paid once (rubric_lab.services.
    # study_batches).
    paid_answer_keys = models.JSONField(default=list, blank=True)
    # Per purpose (lab stage) of the calls of the attempt that ended the unit: calls and
    # tokens, what a later launch's forecast learns from. Null: ended before it was kept.
    purpose_usage = models.JSONField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class EvaluationJob(Job):
    """What every study shares besides a job's fields: a name. A study is running from the
    moment it is made (its units are created with it), and who started it is not looked up
    from the person (no reverse accessor)."""

    name = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.RUNNING)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta(Job.Meta):
        abstract = True

    def __str__(self) -> str:
        return self.name


# --- near misses and sensitivity -----------------------------------------------------------


class JudgeSetup(models.TextChoices):
    GENERIC = "generic", "Six case-agnostic rubrics (jury)"
    INSTANCE = "instance", "Instance rubric"
    PAIRWISE = "pairwise", "Pairwise, no rubric (both orders)"


class SensitivityStudy(EvaluationJob, BatchMode):
    """References from a run scored against near-miss copies by one judge setup; in batch
    mode its calls go through the providers' batch APIs (rubric_lab.services.study_batches)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="sensitivity_studies")
    setup = models.CharField(max_length=20, choices=JudgeSetup.choices)
    # The judge of the instance and pairwise setups; the generic setup uses the jury's judges.
    judge_model = models.CharField(max_length=200, blank=True)
    jury = models.ForeignKey(
        "jury.Jury", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Instance setup: each reference is scored with its rubric from this generation job.
    generation_job = models.ForeignKey(
        GenerationJob,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="sensitivity_studies",
    )
    perturber_model = models.CharField(max_length=200)
    perturbations = models.JSONField(default=list)
    reference_model = models.CharField(max_length=200, blank=True)  # blank: every agent
    max_cases = models.PositiveIntegerField(default=20)
    seed = models.IntegerField(default=0)  # of the bootstrap resamples
    # A type scored on fewer references than this many (or, in a small study, than this share
    # of its references, whichever is fewer) is reported as such and left out of the pooled
    # figure.
    min_type_references = models.PositiveSmallIntegerField(default=5)
    min_type_share = models.FloatField(default=0.25)

    class Meta(EvaluationJob.Meta):
        verbose_name_plural = "sensitivity studies"


class NearMissStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SCORED = "scored", "Scored"
    NOT_APPLICABLE = "not_applicable", "Does not apply"
    FAILED = "failed", "Failed"


class NearMiss(LeasedWork):
    """One reference conversation, one perturbation type: the copy and both scores."""

    study = models.ForeignKey(SensitivityStudy, on_delete=models.CASCADE, related_name="pairs")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40)
    status = models.CharField(
        max_length=20, choices=NearMissStatus.choices, default=NearMissStatus.PENDING
    )
    method = models.CharField(max_length=20, blank=True)  # deterministic | model
    description = models.TextField(blank=True)  # what the copy changed
    # Why the type does not apply to this reference (status not_applicable): counted, not failed.
    not_applicable_reason = models.TextField(blank=True)
    events = models.JSONField(default=list, blank=True)  # the perturbed trace
    changed = models.JSONField(default=dict, blank=True)  # {"modified", "removed", "added"}
    diff = models.TextField(blank=True)
    failure_stage = models.CharField(max_length=20, blank=True)  # perturb | score
    raw_output = RedactedTextField(blank=True)
    reference_score = models.FloatField(null=True, blank=True)
    perturbed_score = models.FloatField(null=True, blank=True)
    # Pairwise: the reference's preference share when shown first and when shown second.
    reference_first = models.FloatField(null=True, blank=True)
    reference_second = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "conversation_id", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "conversation", "kind"], name="unique_near_miss"
            )
        ]
        indexes = [models.Index(fields=["study", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.kind} of {self.conversation_id}"


# --- coverage of expert criteria ----------------------------------------------------------


class ExpertCriteriaUpload(models.Model):
    """One accepted upload of expert criteria; a rejected upload leaves no row at all."""

    benchmark_set = models.ForeignKey(
        BenchmarkSet, on_delete=models.CASCADE, related_name="expert_uploads"
    )
    filename = models.CharField(max_length=200)
    criterion_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.criterion_count} criteria)"


class ExpertCriterion(models.Model):
    """An expert's criterion for one conversation, or for a case (every reply to a benchmark
    entry): exactly one of the two. A conversation's own criteria win over its case's."""

    entry = models.ForeignKey(
        BenchmarkEntry,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="expert_criteria",
    )
    conversation = models.ForeignKey(
        Conversation,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="expert_criteria",
    )
    upload = models.ForeignKey(
        ExpertCriteriaUpload, on_delete=models.CASCADE, related_name="criteria"
    )
    text = models.TextField()
    weight = models.SmallIntegerField(null=True, blank=True)  # HealthBench's points
    # The evaluation axis as the source names it (HealthBench: accuracy, completeness,
    # communication_quality, context_awareness, instruction_following); blank when not given.
    axis = models.CharField(max_length=60, blank=True)
    tags = models.JSONField(default=list, blank=True)  # every tag of the source (level:, ...)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(entry__isnull=False, conversation__isnull=True)
                | models.Q(entry__isnull=True, conversation__isnull=False),
                name="expert_criterion_of_entry_or_conversation",
            )
        ]

    def __str__(self) -> str:
        return self.text[:60]


class CoverageRun(EvaluationJob, BatchMode):
    """CIA of every instance rubric of a generation job whose case has expert criteria; in
    batch mode its judge's calls go through the providers' batch APIs (study_batches)."""

    generation_job = models.ForeignKey(
        GenerationJob, on_delete=models.CASCADE, related_name="coverage_runs"
    )
    judge_model = models.CharField(max_length=200)


class WorkStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    REJECTED = "rejected", "Rejected (constraint violations)"
    FAILED = "failed", "Failed"


class CoverageCase(LeasedWork):
    coverage_run = models.ForeignKey(CoverageRun, on_delete=models.CASCADE, related_name="cases")
    rubric = models.ForeignKey(InstanceRubric, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=20, choices=WorkStatus.choices, default=WorkStatus.PENDING)
    expert_criteria = models.JSONField(default=list, blank=True)  # texts, as judged
    expert_axes = models.JSONField(default=list, blank=True)  # the axis of each ("" if none)
    constraints = models.JSONField(default=list, blank=True)  # [{"criterion", "text"}]
    judgements = models.JSONField(default=list, blank=True)
    constraint_count = models.PositiveIntegerField(default=0)
    entailed = models.PositiveIntegerField(default=0)
    generated = models.PositiveIntegerField(default=0)
    matched = models.PositiveIntegerField(default=0)
    failure_stage = models.CharField(max_length=20, blank=True)  # decompose | entail
    raw_output = RedactedTextField(blank=True)

    class Meta:
        ordering = ["coverage_run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["coverage_run", "rubric"], name="unique_coverage_case")
        ]
        indexes = [models.Index(fields=["coverage_run", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"coverage of rubric {self.rubric_id}"


# --- critique-then-refine -------------------------------------------------------------------


class RefineStudy(EvaluationJob, BatchMode):
    """Rubric-guided critique between two controls - self-critique (no rubric, the lower one)
    and critique with the expert criteria (the oracle, the upper one) - judged independently
    with the six case-agnostic rubrics and, where the conversation has them, against the
    expert criteria; in batch mode its calls go through the providers' batch APIs
    (rubric_lab.services.study_batches)."""

    generation_job = models.ForeignKey(
        GenerationJob, on_delete=models.CASCADE, related_name="refine_studies"
    )
    evaluator_model = models.CharField(max_length=200)
    editor_model = models.CharField(max_length=200)
    # The independent judge scores with the six case-agnostic rubrics, not the instance one.
    judge_model = models.CharField(max_length=200)
    # Judges each criterion of the expert criteria on the original and the refined
    # conversation (blank: not scored against the expert criteria).
    criteria_judge_model = models.CharField(max_length=200, blank=True)
    max_cases = models.PositiveIntegerField(default=20)

    class Meta(EvaluationJob.Meta):
        verbose_name_plural = "refine studies"


class RefineArm(models.TextChoices):
    RUBRIC = "rubric", "Critique with the instance rubric"
    SELF = "self", "Self-critique (no rubric)"
    ORACLE = "oracle", "Critique with the expert criteria (oracle)"


class Refinement(LeasedWork):
    study = models.ForeignKey(RefineStudy, on_delete=models.CASCADE, related_name="refinements")
    rubric = models.ForeignKey(InstanceRubric, on_delete=models.CASCADE, related_name="+")
    arm = models.CharField(max_length=20, choices=RefineArm.choices)
    status = models.CharField(max_length=20, choices=WorkStatus.choices, default=WorkStatus.PENDING)
    plan = models.JSONField(default=list, blank=True)
    edits = models.JSONField(default=list, blank=True)
    violations = models.JSONField(default=list, blank=True)
    events = models.JSONField(default=list, blank=True)  # the refined trace
    diff = models.TextField(blank=True)
    original_score = models.FloatField(null=True, blank=True)
    refined_score = models.FloatField(null=True, blank=True)
    # Normalised scores against the expert criteria, overall and per axis
    # ({axis: {"original": x, "refined": y}}); null when not scored against them.
    original_expert_score = models.FloatField(null=True, blank=True)
    refined_expert_score = models.FloatField(null=True, blank=True)
    expert_axes = models.JSONField(default=dict, blank=True)
    failure_stage = models.CharField(max_length=20, blank=True)  # critique | edit | judge
    raw_output = RedactedTextField(blank=True)

    class Meta:
        ordering = ["study", "rubric_id", "arm"]
        constraints = [
            models.UniqueConstraint(fields=["study", "rubric", "arm"], name="unique_refinement")
        ]
        indexes = [models.Index(fields=["study", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.arm} refinement of rubric {self.rubric_id}"


# --- ablations ------------------------------------------------------------------------------


class AblationStudy(EvaluationJob, BatchMode):
    """The pipeline in full, without each of four stages, and the direct-generation baseline on
    the same conversations, then coverage and sensitivity of each variant side by side; in
    batch mode every job it launches (rubrics, coverage, sensitivity) is a batch one."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="ablation_studies")
    generator_model = models.CharField(max_length=200)
    judge_model = models.CharField(max_length=200)
    perturber_model = models.CharField(max_length=200)
    reference_model = models.CharField(max_length=200, blank=True)
    max_cases = models.PositiveIntegerField(default=10)

    class Meta(EvaluationJob.Meta):
        verbose_name_plural = "ablation studies"


class AblationVariant(models.TextChoices):
    FULL = "full", "Full pipeline"
    NO_ROUTING = "no_routing", "Without routing"
    NO_INTENT = "no_intent", "Without interaction intent"
    NO_FACTS = "no_facts", "Without the medical-fact agent"
    NO_AUDIT = "no_audit", "Without audit"
    DIRECT = "direct", "Direct generation (one call, baseline)"


class AblationArm(models.Model):
    study = models.ForeignKey(AblationStudy, on_delete=models.CASCADE, related_name="arms")
    variant = models.CharField(max_length=20, choices=AblationVariant.choices)
    generation_job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="+")
    coverage_run = models.ForeignKey(
        CoverageRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    sensitivity_study = models.ForeignKey(
        SensitivityStudy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "variant"], name="unique_ablation_arm")
        ]

    def __str__(self) -> str:
        return f"{self.study} / {self.variant}"
