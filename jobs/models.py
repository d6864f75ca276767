"""What every kind of job shares: its status, cost limit and times (the abstract `Job`), the
retry counts and accounting row of its model calls (abstract), and the heartbeats of the
processes that play queued work.

Concrete jobs live in the apps above (benchmark.Run, jury.ScoringJob, the rubric lab's jobs)
and subclass these, so the machinery in jobs.services knows every job by the same fields.
"""

from django.conf import settings
from django.db import models

from llm.fields import RedactedTextField


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PAUSED = "paused", "Paused"
    FINISHED = "finished", "Finished"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


class CostLimited(models.Model):
    """A job that stops sending work once what it spent reaches its cost limit, and is paused
    with the reason (jobs.services.cost_limits); resuming may raise the limit."""

    cost_limit_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    stop_reason = models.TextField(blank=True)

    class Meta:
        abstract = True


class BatchMode(models.Model):
    """A job whose model calls may go through the providers' batch APIs (jobs.services.
    batch_jobs): about half the price, answers within 24 hours. A request a batch gave no
    answer goes out again in a new batch, or live when the researcher chose so."""

    batch = models.BooleanField(default=False)
    batch_resend_live = models.BooleanField(default=False)

    class Meta:
        abstract = True


class Job(CostLimited):
    """What every job of the site declares once: runs, scoring jobs, the rubric lab's
    generation jobs and studies. Work is sent `concurrency` units at a time (the rest waits in
    the database), model answers may come from the cache, and a failed job says why.
    A kind of job that differs overrides the field (a scoring job's wider window, a lab
    study's start as running); one that has no such thing sets it to None (a run's failures
    belong to its conversations)."""

    use_cache = models.BooleanField(default=True)
    concurrency = models.PositiveSmallIntegerField(default=8)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    failure_reason = RedactedTextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


class ProviderRetries(models.Model):
    """Model calls asked again after a fault, by kind (llm.engine.chat.RETRY_KINDS).

    Integer columns rather than one JSON value, so a run's or a job's totals are one SUM."""

    retries_rate_limit = models.PositiveIntegerField(default=0)
    retries_server = models.PositiveIntegerField(default=0)
    retries_timeout = models.PositiveIntegerField(default=0)
    retries_connection = models.PositiveIntegerField(default=0)
    retries_malformed = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class ModelCallRecord(ProviderRetries):
    """What the accounting (jobs.services.accounting) writes for every answered model call:
    purpose, model, tokens, cost, whether the cache answered. A concrete subclass adds what
    the call belongs to (benchmark.models.ModelCall: its run, set or conversation).

    A row is an answered call; its retry counts are the faults asked again before the answer."""

    purpose = models.CharField(max_length=20, db_index=True)
    model = models.CharField(max_length=200)
    # input_tokens counts the whole prompt; of it, cached_input_tokens were read from the
    # provider's prompt cache and cache_write_tokens written to it, each at its own price.
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    # What the call would have cost with no prompt caching (every input token at the input
    # price). Null on rows from before it was kept: their cost was reckoned that way already.
    list_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cached = models.BooleanField(default=False)
    latency_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # One per answer (accounting.RecordingClient writes it as the answer arrives, or with its
    # unit's outcome): an answer written twice is recognised, never counted twice. Blank on
    # rows from before it existed.
    answer_key = models.CharField(max_length=32, unique=True, null=True, blank=True)
    # The sampling seed sent with the call (null when the provider took none) and the
    # provider's fingerprint of the backend that answered (blank when it gave none).
    seed = models.BigIntegerField(null=True, blank=True)
    fingerprint = models.CharField(max_length=100, blank=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.purpose} {self.model}"


class WorkerHeartbeat(models.Model):
    """A process that plays queued work reports here every WORKER_HEARTBEAT_SECONDS, so pages
    can tell a job that moves from one that waits for a worker nobody runs.

    A Celery worker serves every job on its queue (`serving` blank); an inline command
    (`run_benchmark --inline`) serves one job only ("benchmark.run:12")."""

    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    process_started_at = models.DateTimeField()
    mode = models.CharField(max_length=20)  # "embedded" or "redis" (queue workers), "inline"
    serving = models.CharField(max_length=100, blank=True)
    concurrency = models.PositiveSmallIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Created by the benchmark app before this one existed: the table keeps its name.
        db_table = "benchmark_workerheartbeat"
        ordering = ["-last_seen_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["hostname", "pid", "process_started_at"], name="unique_worker_process"
            )
        ]

    def __str__(self) -> str:
        what = "inline command" if self.mode == "inline" else f"{self.mode}-queue worker"
        threads = f", {self.concurrency} threads" if self.concurrency else ""
        return f"{what}, pid {self.pid} on {self.hostname}{threads}"


class BatchState(models.TextChoices):
    # The row is written before the provider is asked, so a batch is never made unrecorded.
    SUBMITTING = "submitting", "Submitting"
    IN_PROGRESS = "in_progress", "In progress"
    ENDED = "ended", "Ended"  # results can be read; not all recorded yet
    RECORDED = "recorded", "Recorded"  # every result recorded (or sent again)
    LOST = "lost", "Lost"  # its worker died before the provider named it: sent again


class ProviderBatch(models.Model):
    """One batch a job sent to a provider's batch API (jobs.services.batches): which job (kind
    and id, as the watch knows jobs), the model, the provider's batch id, its state and request
    counts, and which unit of the job each request (custom id) belongs to."""

    job_kind = models.CharField(max_length=50)
    job_id = models.PositiveIntegerField()
    provider = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    batch_id = models.CharField(max_length=200, blank=True)
    state = models.CharField(
        max_length=20, choices=BatchState.choices, default=BatchState.SUBMITTING
    )
    # The provider's own word for the state ("validating", "finalizing", "expired", ...).
    detail = models.CharField(max_length=50, blank=True)
    counts = models.JSONField(default=dict)  # succeeded, errored, expired, cancelled, processing
    requests = models.JSONField(default=dict)  # custom id -> the unit's primary key
    # Custom id -> what reading its answer needs of the request (BatchReceipt.to_data), kept
    # when the batch is sent so the requests are not built again to read the answers. Empty
    # for a batch sent before receipts were kept: its requests are built again.
    receipts = models.JSONField(default=dict)
    # Every custom id starts with the tag (the row's id and a random part), and OpenAI's batch
    # carries it in its metadata: a batch made by a worker that died before storing its id is
    # found among the provider's batches by it (jobs.services.batches.batch_adopt).
    tag = models.CharField(max_length=40, blank=True)
    # OpenAI's uploaded input file, stored before the batch is made of it.
    input_file_id = models.CharField(max_length=200, blank=True)
    error = RedactedTextField(blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job_kind", "job_id", "pk"]
        indexes = [models.Index(fields=["job_kind", "job_id", "state"])]

    def __str__(self) -> str:
        return f"{self.model} batch {self.batch_id or '(submitting)'}: {self.state}"


class BatchPollLease(models.Model):
    """Who polls a job's batches now: two watches of one job (every worker that starts takes
    up the watch of every running job) must never both send the same pending units."""

    job_kind = models.CharField(max_length=50)
    job_id = models.PositiveIntegerField()
    held_until = models.DateTimeField(null=True, blank=True)
    token = models.CharField(max_length=32, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job_kind", "job_id"], name="unique_batch_poll_lease")
        ]

    def __str__(self) -> str:
        return f"poll of {self.job_kind} {self.job_id}"


class ReplayState(models.TextChoices):
    PENDING = "pending", "Waiting for a batch"
    ANSWERED = "answered", "Answered"
    FAILED = "failed", "No answer"


class ReplayRequest(models.Model):
    """One model call a unit of a job in batch mode by cache replay (jobs.services.
    replay_batches) reached and could not have answered: the request as it was made, so a
    batch can send it, and its answer once recorded; the unit waits for it."""

    job_kind = models.CharField(max_length=50)
    job_id = models.PositiveIntegerField()
    unit_id = models.PositiveIntegerField()  # the unit of the job that made the call
    model = models.CharField(max_length=200)
    request = models.JSONField()  # the ChatRequest's fields (replay_batches.request_data)
    state = models.CharField(
        max_length=20, choices=ReplayState.choices, default=ReplayState.PENDING
    )
    error = RedactedTextField(blank=True)  # why its last batch gave no answer
    # The answer as recorded (llm response JSON): the replay reads it back from here whatever
    # the response cache holds, so an answer evicted from the cache is never bought again.
    answer = models.TextField(blank=True)
    # The accounting key the answer was paid under (blank for one the cache gave): the unit's
    # replay reads the answer back under it, so no second accounting row is written for it.
    answer_key = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_kind", "job_id", "pk"]
        indexes = [models.Index(fields=["job_kind", "job_id", "state"])]

    def __str__(self) -> str:
        return f"{self.job_kind} {self.job_id} unit {self.unit_id}: {self.state}"
