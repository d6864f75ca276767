"""Benchmark data: distributions, cases, agents, runs, conversations and their traces.

Model identity lives on RunAgent only. A Conversation points at it by foreign key and is
otherwise anonymous (public_id), so blinded views can show a conversation without any path
to the model that produced it.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Count, Q, Sum

from benchmark.fields import CompressedJSONField
from jobs.models import BatchMode, CostLimited, Job, JobStatus, ModelCallRecord, ProviderRetries
from llm.fields import RedactedTextField


class Distribution(models.Model):
    """A seed distribution file, stored verbatim; its fingerprint is its version."""

    name = models.CharField(max_length=200)
    yaml_text = models.TextField()
    fingerprint = models.CharField(max_length=64, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint[:8]})"


class BenchmarkSet(CostLimited, BatchMode):
    name = models.CharField(max_length=200)
    # Null for a set imported with its conversations (benchmark.services.imports): its cases
    # were never sampled from a distribution.
    distribution = models.ForeignKey(
        Distribution, null=True, blank=True, on_delete=models.PROTECT, related_name="sets"
    )
    # Where an imported set and its run came from ("HealthBench JSONL: oss_eval.jsonl");
    # blank for a set sampled and enriched here.
    imported_from = models.CharField(max_length=300, blank=True)
    sampler_seed = models.BigIntegerField()
    size = models.PositiveIntegerField()
    generator_model = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    error = RedactedTextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def imported(self) -> bool:
        return bool(self.imported_from)

    def progress(self) -> dict:
        counts = self.entries.aggregate(
            done=Count("id", filter=Q(status=EntryStatus.READY)),
            failed=Count("id", filter=Q(status=EntryStatus.FAILED)),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cost=Sum("cost_usd"),
            # Failed entries spent money too: an unpriced call among them makes the cost unknown.
            unknown_cost=Count(
                "id", filter=~Q(status=EntryStatus.PENDING) & Q(cost_usd__isnull=True)
            ),
        )
        counts["total"] = self.size
        counts["pending"] = self.size - counts["done"] - counts["failed"]
        counts.update(
            self.model_calls.aggregate(calls=Count("id"), cached=Count("id", filter=Q(cached=True)))
        )
        return counts


class EntryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class BenchmarkEntryQuerySet(models.QuerySet):
    def ready(self):
        return self.filter(status=EntryStatus.READY)

    def feasible(self):
        """Cases whose patient is plausible: no eligibility rule broken on purpose."""
        return self.filter(infeasible=False)

    def infeasible(self):
        return self.filter(infeasible=True)


class BenchmarkEntry(models.Model):
    """One patient case: the sampled seed and, once enriched, profile, story and complexity."""

    # Seed attributes copied to columns (see below), and everything the entry list filters on.
    SEED_COLUMNS = (
        "condition",
        "severity",
        "task_category",
        "task_subcategory",
        "age_group",
        "gender_identity",
        "care_preference",
        "personality",
    )
    FILTER_FIELDS = (*SEED_COLUMNS, "infeasible", "complexity", "status")

    benchmark_set = models.ForeignKey(
        BenchmarkSet, on_delete=models.CASCADE, related_name="entries"
    )
    index = models.PositiveIntegerField()
    seed = models.JSONField()
    # Seed attributes copied to columns so entries can be filtered and counted in the database.
    condition = models.CharField(max_length=200, db_index=True)
    severity = models.CharField(max_length=40, db_index=True)
    task_category = models.CharField(max_length=60, db_index=True)
    task_subcategory = models.CharField(max_length=80, db_index=True)
    age_group = models.CharField(max_length=40, db_index=True)
    gender_identity = models.CharField(max_length=40, db_index=True)
    care_preference = models.CharField(max_length=40, db_index=True)
    personality = models.CharField(max_length=40, db_index=True)
    # Set for a seed drawn to break an eligibility rule on purpose (the seed's `broken_rule`).
    infeasible = models.BooleanField(default=False, db_index=True)
    broken_rule = models.CharField(max_length=500, blank=True)

    status = models.CharField(
        max_length=20, choices=EntryStatus.choices, default=EntryStatus.PENDING
    )
    failure_reason = RedactedTextField(blank=True)
    profile = models.JSONField(null=True, blank=True)
    story = models.TextField(blank=True)
    complexity = models.CharField(max_length=20, blank=True, db_index=True)
    generator_model = models.CharField(max_length=200)
    # The enrichment task's lease (jobs.services.leases), as on judge scores.
    claimed_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    raw_responses = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BenchmarkEntryQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark_set", "index"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark_set", "index"], name="unique_entry_index")
        ]
        indexes = [models.Index(fields=["benchmark_set", "status", "claimed_until"])]

    def __str__(self) -> str:
        return f"{self.benchmark_set} #{self.index}"

    @classmethod
    def from_seed(cls, benchmark_set: "BenchmarkSet", seed: dict, **fields) -> "BenchmarkEntry":
        """An unsaved entry for a sampled seed, its attributes copied to their columns."""
        columns = {name: seed[name] for name in cls.SEED_COLUMNS}
        broken = seed.get("broken_rule")  # absent from seeds sampled before eligibility rules
        columns.update(infeasible=bool(broken), broken_rule=broken["text"] if broken else "")
        return cls(benchmark_set=benchmark_set, index=seed["index"], seed=seed, **columns, **fields)

    @property
    def patient_name(self) -> str:
        if not self.profile:
            return ""
        return f"{self.profile.get('first_name', '')} {self.profile.get('last_name', '')}".strip()


class AgentConfig(models.Model):
    """An assistant configuration (prompt variant) stored as YAML, versioned by fingerprint."""

    slug = models.SlugField(max_length=80)
    name = models.CharField(max_length=200)
    yaml_text = models.TextField()
    fingerprint = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["slug", "fingerprint"], name="unique_agent_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.fingerprint[:8]})"


class Run(Job):
    name = models.CharField(max_length=200)
    benchmark_set = models.ForeignKey(BenchmarkSet, on_delete=models.PROTECT, related_name="runs")
    patient_model = models.CharField(max_length=200)
    patient_prompt_version = models.CharField(max_length=80)
    roster_model = models.CharField(max_length=200)
    repetitions = models.PositiveSmallIntegerField(default=1)
    max_turns = models.PositiveSmallIntegerField(default=15)
    seed = models.BigIntegerField(default=0)
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64)
    # What the run was made with, taken at launch (benchmark.services.provenance): the hash of
    # every data file it reads, package versions, the code's commit. Its manifest reads them;
    # empty for runs launched before manifests existed.
    inputs = models.JSONField(default=dict, blank=True)
    failure_reason = None  # a run does not fail as a whole: its conversations do, each with why
    started_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name

    @property
    def imported(self) -> bool:
        """Conversations played elsewhere and imported (no sandbox, nothing to resume)."""
        return self.benchmark_set.imported


class RunAgent(models.Model):
    """The system under test inside a run: a model string plus an agent configuration."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="agents")
    model = models.CharField(max_length=200)
    # Null for the replies of an imported run: no configuration of this site produced them.
    agent_config = models.ForeignKey(AgentConfig, null=True, blank=True, on_delete=models.PROTECT)
    label = models.CharField(max_length=200)

    class Meta:
        ordering = ["run", "id"]

    def __str__(self) -> str:
        return self.label

    @property
    def is_scripted(self) -> bool:
        return self.model.startswith("offline/")


class ConversationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Termination(models.TextChoices):
    PATIENT_ENDED = "patient_ended", "Patient ended"
    TURN_CAP = "turn_cap", "Turn cap reached"
    AGENT_ERROR = "agent_error", "Agent error"
    PROVIDER_ERROR = "provider_error", "Provider error"
    CANCELLED = "cancelled", "Cancelled"
    INFRASTRUCTURE = "infrastructure_error", "Infrastructure error"
    # Played elsewhere and imported with its trace (benchmark.services.imports): no sandbox.
    IMPORTED = "imported", "Imported"


# Terminations that say nothing about the agent: counted and shown, never scored.
UNSCORABLE = (
    Termination.PROVIDER_ERROR,
    Termination.CANCELLED,
    Termination.INFRASTRUCTURE,
    Termination.AGENT_ERROR,
)


class ConversationQuerySet(models.QuerySet):
    def scorable(self):
        return self.filter(status=ConversationStatus.FINISHED).exclude(
            termination_reason__in=UNSCORABLE
        )


class Conversation(ProviderRetries):
    """One unit of work: (run, case, agent, repetition). Anonymous by design (see module doc).

    The retry counts are those of the attempt stored, failed calls included."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="conversations")
    run_agent = models.ForeignKey(RunAgent, on_delete=models.CASCADE, related_name="conversations")
    entry = models.ForeignKey(
        BenchmarkEntry, on_delete=models.PROTECT, related_name="conversations"
    )
    repetition = models.PositiveSmallIntegerField(default=0)
    seed = models.BigIntegerField()
    status = models.CharField(
        max_length=20, choices=ConversationStatus.choices, default=ConversationStatus.PENDING
    )
    termination_reason = models.CharField(max_length=40, choices=Termination.choices, blank=True)
    error = RedactedTextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    clock = models.DateTimeField(null=True, blank=True)
    sandbox_initial = CompressedJSONField(null=True, blank=True)
    sandbox_final = CompressedJSONField(null=True, blank=True)
    final_state_hash = models.CharField(max_length=64, blank=True)
    write_actions = models.JSONField(default=list, blank=True)
    assistant_turns = models.PositiveSmallIntegerField(default=0)
    usage = models.JSONField(default=dict, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_known = models.BooleanField(default=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Refreshed while queued or running; a stale one means a lost task or a crashed worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The process holding the conversation while it is in flight (blank while it waits in
    # the task queue): host, pid and the process's start (time and kernel ticks), which
    # tells a reused pid apart. Work held by a process that no longer exists on this host is
    # taken back at once instead of after its lease (jobs.services.processes).
    holder_host = models.CharField(max_length=255, blank=True)
    holder_pid = models.PositiveIntegerField(null=True, blank=True)
    holder_started_at = models.DateTimeField(null=True, blank=True)
    holder_start_ticks = models.BigIntegerField(null=True, blank=True)  # see processes.py

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering = ["run", "entry__index", "run_agent", "repetition"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "run_agent", "entry", "repetition"], name="unique_unit_of_work"
            )
        ]
        # (run, status, id): run_dispatch reads a run's pending conversations in key order
        # straight from the index, without a sort or a finished row.
        indexes = [models.Index(fields=["run", "status", "id"])]

    def __str__(self) -> str:
        return str(self.public_id)


class CaseRoster(models.Model):
    """The provider roster of one case and repetition of a run (one `seed`), written once and
    met by every agent's conversation of it: each agent faces the same offices and doctors,
    and the roster writer is paid once per case, not once per agent.

    A conversation that finds no roster claims the row and writes it; the others wait for
    it. A claim is held while its conversation is running the same attempt: a claimer that
    failed, was cancelled or lost its worker (the run's watch puts it back to pending) leaves
    the claim to the next conversation that needs the roster (benchmark.services.rosters)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="case_rosters")
    seed = models.BigIntegerField()
    roster = models.JSONField(null=True, blank=True)
    claimed_by = models.ForeignKey(
        "Conversation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    claimed_attempt = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seed"], name="unique_case_roster")]

    def __str__(self) -> str:
        return f"roster of run {self.run_id}, seed {self.seed}"


class TraceEvent(models.Model):
    """One event of a trace. (conversation, event_id) is stable so feedback can point at it."""

    # The fields copied from the engine's TraceEvent; also the fields a JSONL export carries.
    ENGINE_FIELDS = (
        "event_id",
        "turn",
        "kind",
        "content",
        "tool_name",
        "tool_call_id",
        "arguments",
        "ok",
        "model_role",
        "input_tokens",
        "output_tokens",
        "latency_ms",
        "cost_usd",
        "cached",
        "retries",
        "refused",
    )

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=16)
    seq = models.PositiveIntegerField()
    turn = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=30)
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=80, blank=True)
    tool_call_id = models.CharField(max_length=120, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    ok = models.BooleanField(null=True)
    model_role = models.CharField(max_length=20, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached = models.BooleanField(default=False)
    retries = models.PositiveSmallIntegerField(default=0)
    # The model declined to answer: an assistant message holding its refusal, or the patient
    # model's refusal that ended the conversation.
    refused = models.BooleanField(default=False)

    class Meta:
        ordering = ["conversation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "event_id"], name="unique_event_id")
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}/{self.event_id}"


class ModelCall(ModelCallRecord):
    """Accounting for every model call by purpose: enrichment, roster, patient, assistant,
    judge; each row belongs to a run, a benchmark set or a conversation."""

    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="model_calls"
    )
    benchmark_set = models.ForeignKey(
        BenchmarkSet, null=True, blank=True, on_delete=models.CASCADE, related_name="model_calls"
    )
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="model_calls"
    )
