"""Distributions, benchmark sets and the enrichment of their entries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache, partial

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from audit.services import audit_record, fields_of
from benchmark.engine.distribution import (
    DEFAULT_DISTRIBUTION_PATH,
    parse_distribution,
)
from benchmark.engine.distribution import (
    Distribution as DistributionSpec,
)
from benchmark.engine.enrichment import enrich
from benchmark.engine.sampler import sample_seeds
from benchmark.models import BenchmarkEntry, BenchmarkSet, Distribution, EntryStatus, ModelCall
from jobs.models import JobStatus
from jobs.services import accounting, cost_limits
from jobs.services.cost_limits import cost_limit_reached, cost_limit_refusal
from jobs.services.leases import (
    Heartbeat,
    LeasedTask,
    any_pending,
    lease_claim,
    lease_dispatch,
    lease_extender,
    lease_release_fields,
)
from jobs.signals import job_ended_send
from llm.clients import model_router
from llm.engine.chat import ProviderError
from llm.engine.providers.client import batch_capable
from llm.engine.providers.redaction import failure_text

logger = logging.getLogger(__name__)
MAX_SET_SIZE = 20_000


class BenchmarkSetError(ValueError):
    """A benchmark set cannot be created as asked; the message says why."""


def distribution_create(*, name: str, yaml_text: str, user=None) -> Distribution:
    """Validate and store a distribution; raises DistributionError listing every problem."""
    spec = _parsed(yaml_text, name or "uploaded file")
    distribution = Distribution(
        name=name or spec.name, yaml_text=yaml_text, fingerprint=spec.fingerprint, created_by=user
    )
    distribution.full_clean()
    distribution.save()
    return distribution


def distribution_default_ensure() -> Distribution:
    text = DEFAULT_DISTRIBUTION_PATH.read_text(encoding="utf-8")
    spec = _parsed(text, DEFAULT_DISTRIBUTION_PATH.name)
    existing = Distribution.objects.filter(fingerprint=spec.fingerprint).first()
    return existing or distribution_create(name=spec.name, yaml_text=text)


def distribution_spec(distribution: Distribution) -> DistributionSpec:
    return _parsed(distribution.yaml_text, distribution.name)


@lru_cache(maxsize=32)
def _parsed(yaml_text: str, source: str) -> DistributionSpec:
    """Parsing takes a tenth of a second (pure-Python YAML) and a stored text never changes."""
    return parse_distribution(yaml_text, source=source)


@transaction.atomic
def benchmark_set_create(
    *,
    name: str,
    distribution: Distribution,
    size: int,
    sampler_seed: int,
    generator_model: str,
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> BenchmarkSet:
    """Sample the seeds now (reproducibly) and leave one pending entry per seed. `batch`
    sends the enrichment calls through the providers' batch APIs
    (benchmark.services.case_batches), `batch_resend_live` calls live what a batch left
    unanswered."""
    if not 1 <= size <= MAX_SET_SIZE:
        raise BenchmarkSetError(f"Size must be between 1 and {MAX_SET_SIZE:,}.")
    if batch and not batch_capable(generator_model):
        raise BenchmarkSetError(
            f"Batch mode needs a model with a batch API (openai/, anthropic/ or offline/): "
            f"{generator_model} has none."
        )
    refusal = cost_limit_refusal(models=[generator_model], cost_limit_usd=cost_limit_usd)
    if refusal:
        raise BenchmarkSetError(refusal)
    benchmark_set = BenchmarkSet(
        name=name,
        distribution=distribution,
        size=size,
        sampler_seed=sampler_seed,
        generator_model=generator_model,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        status=JobStatus.RUNNING,
        created_by=user,
    )
    benchmark_set.full_clean()
    benchmark_set.save()
    seeds = sample_seeds(distribution_spec(distribution), size, sampler_seed)
    BenchmarkEntry.objects.bulk_create(_pending_entry(benchmark_set, seed) for seed in seeds)
    audit_record(
        actor=user,
        action="set.created",
        target=benchmark_set,
        after=fields_of(
            benchmark_set, "size", "sampler_seed", "generator_model", "distribution", "batch"
        ),
    )
    return benchmark_set


def _pending_entry(benchmark_set: BenchmarkSet, seed: dict) -> BenchmarkEntry:
    return BenchmarkEntry.from_seed(
        benchmark_set, seed, generator_model=benchmark_set.generator_model
    )


def pending_entry_ids(benchmark_set: BenchmarkSet) -> list[int]:
    return list(
        benchmark_set.entries.filter(status=EntryStatus.PENDING).values_list("id", flat=True)
    )


# Enrichment calls sent to the workers at once per set; the rest wait in the database, so a
# call lost with a worker is found and sent again within one lease (see services.leases).
ENRICHMENT_WINDOW = 32


def enrichment_dispatch(
    benchmark_set: BenchmarkSet, send: Callable[[list[LeasedTask]], None]
) -> list[LeasedTask]:
    """Keep up to ENRICHMENT_WINDOW of the set's pending entries with the workers; entries
    whose worker died are sent again once their lease runs out."""
    with transaction.atomic():
        locked = BenchmarkSet.objects.select_for_update().get(pk=benchmark_set.pk)
        if locked.status != JobStatus.RUNNING:
            return []
        pending = locked.entries.filter(status=EntryStatus.PENDING)
        sent = lease_dispatch(
            pending,
            window=ENRICHMENT_WINDOW,
            send=send,
            stop=lambda: benchmark_set_over_limit(locked),
        )
    benchmark_set_finish_if_done(benchmark_set)
    return sent


def benchmark_set_over_limit(benchmark_set: BenchmarkSet) -> bool:
    """The set's cost limit check (pauses it once reached), for every way entries are sent."""
    return cost_limit_reached(benchmark_set, spent=lambda: benchmark_set_spent(benchmark_set))


def benchmark_set_spent(benchmark_set: BenchmarkSet) -> Decimal:
    return accounting.known_cost(benchmark_set.model_calls.all())


def benchmark_set_resume(benchmark_set: BenchmarkSet, *, cost_limit_usd: Decimal | None) -> None:
    """Continue a set paused at its cost limit, with a higher limit; the caller dispatches.
    Raises CostLimitError when the limit is still reached or the model has no price."""
    cost_limits.job_resume(
        benchmark_set,
        spent=benchmark_set_spent(benchmark_set),
        models=[benchmark_set.generator_model],
        cost_limit_usd=cost_limit_usd,
    )


def set_id_of(entry_id: int) -> int | None:
    return (
        BenchmarkEntry.objects.filter(pk=entry_id)
        .values_list("benchmark_set_id", flat=True)
        .first()
    )


def running_set_ids() -> list[int]:
    return list(BenchmarkSet.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


def entry_enrich(entry_id: int, token: str | None = None) -> None:
    """Enrich one pending entry if this message may take it (see services.leases; token None:
    run here unless a worker holds it). Invalid output fails it with the reason, never
    half-saved."""
    row = BenchmarkEntry.objects.filter(pk=entry_id, status=EntryStatus.PENDING)
    mine = lease_claim(row, token)
    if mine is None:
        return
    with Heartbeat(lease_extender(row, mine), label=f"entry {entry_id}"):
        _enrich(entry_id)


def _enrich(entry_id: int) -> None:
    entry = BenchmarkEntry.objects.select_related("benchmark_set").get(pk=entry_id)
    recorder = accounting.RecordingClient(
        model_router(True), owner=partial(ModelCall, benchmark_set=entry.benchmark_set)
    )
    try:
        result = enrich(
            recorder,
            entry.seed,
            model=entry.generator_model,
            today=entry.benchmark_set.created_at.date(),
            sample=f"set-seed:{entry.benchmark_set.sampler_seed}/entry:{entry.index}",
        )
    except ProviderError as error:
        _entry_fail(entry, failure_text(error), recorder)
    except Exception as error:  # a bug must not leave the entry pending and the set unfinished
        logger.exception("enriching entry %s failed unexpectedly", entry_id)
        _entry_fail(entry, failure_text(error), recorder)
    else:
        if result.ok:
            _entry_ready(entry, result.entry, recorder)
        else:
            _entry_fail(entry, result.failure_reason, recorder)
    benchmark_set_finish_if_done(entry.benchmark_set)


def _entry_ready(entry: BenchmarkEntry, data: dict, recorder) -> None:
    entry.profile = data["patient_profile"]
    entry.story = data["patient_story"]
    entry.complexity = data["scenario_complexity"]
    _entry_save(entry, EntryStatus.READY, "", recorder)


def _entry_fail(entry: BenchmarkEntry, reason: str, recorder) -> None:
    _entry_save(entry, EntryStatus.FAILED, reason, recorder)


@transaction.atomic
def _entry_save(entry: BenchmarkEntry, status: str, reason: str, recorder) -> None:
    accounting.unwritten_save(recorder)
    # A task delivered twice may have enriched the entry meanwhile: keep the first result.
    if (
        not BenchmarkEntry.objects.select_for_update()
        .filter(pk=entry.pk, status=EntryStatus.PENDING)
        .exists()
    ):
        return
    responses = [response for _, response in recorder.calls]
    sums = accounting.totals(responses)
    entry.status, entry.failure_reason = status, reason
    entry.attempts = len(responses)
    entry.raw_responses = [r.text for r in responses]
    entry.input_tokens, entry.output_tokens = sums["input_tokens"], sums["output_tokens"]
    entry.cost_usd = sums["cost_usd"]
    for field, value in lease_release_fields().items():
        setattr(entry, field, value)
    entry.save()


def benchmark_set_finish_if_done(benchmark_set: BenchmarkSet) -> None:
    """Once no entry is pending: finished, or failed with the reason when no case came out
    ready (a set with no case to run is no finished set)."""
    if any_pending(benchmark_set.entries.filter(status=EntryStatus.PENDING)):
        return
    error = _every_case_failed(benchmark_set)
    status = JobStatus.FAILED if error else JobStatus.FINISHED
    ended = BenchmarkSet.objects.filter(pk=benchmark_set.pk, status=JobStatus.RUNNING).update(
        status=status, error=error
    )
    if ended:
        job_ended_send(benchmark_set, status)


def _every_case_failed(benchmark_set: BenchmarkSet) -> str:
    """Why every case failed (their commonest reason), or "" when one came out ready."""
    entries = benchmark_set.entries.all()
    if entries.filter(status=EntryStatus.READY).exists():
        return ""
    failed = entries.filter(status=EntryStatus.FAILED)
    commonest = failed.values_list("failure_reason").annotate(n=Count("id")).order_by("-n").first()
    if commonest is None:
        return ""
    return f"All {failed.count()} cases failed; commonest reason: {commonest[0]}"


def benchmark_set_retry_failed(benchmark_set: BenchmarkSet) -> int:
    """Put failed entries back to pending (after fixing a provider, say) and the set back to
    running; returns how many. Entries lost with a worker need no retry: the watch sends them
    again."""
    retry = benchmark_set.entries.filter(status=EntryStatus.FAILED)
    count = retry.update(
        status=EntryStatus.PENDING,
        failure_reason="",
        updated_at=timezone.now(),
        **lease_release_fields(),
    )
    if count or benchmark_set.entries.filter(status=EntryStatus.PENDING).exists():
        BenchmarkSet.objects.filter(pk=benchmark_set.pk).update(
            status=JobStatus.RUNNING, stop_reason="", error=""
        )
    return count


def benchmark_sets_counts(benchmark_sets) -> dict[int, dict]:
    """Each set's entries done, failed and pending (its progress's counts), in one query for
    them all: what a list shows per row."""
    sizes = {benchmark_set.pk: benchmark_set.size for benchmark_set in benchmark_sets}
    rows = (
        BenchmarkEntry.objects.filter(benchmark_set__in=list(sizes))
        .values_list("benchmark_set_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_set: dict[int, dict] = {pk: {} for pk in sizes}
    for set_id, status, n in rows:
        by_set[set_id][status] = n
    counts = {}
    for pk, size in sizes.items():
        done = by_set[pk].get(EntryStatus.READY, 0)
        failed = by_set[pk].get(EntryStatus.FAILED, 0)
        pending = size - done - failed
        counts[pk] = {"total": size, "done": done, "failed": failed, "pending": pending}
    return counts
