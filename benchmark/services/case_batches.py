"""Case enrichment in batch mode: a set's enrichment calls go through the providers' batch
APIs (about half the price, answers within 24 hours) instead of one live call per worker task.

The shared poll (jobs.services.batch_jobs) does the work from the set's watch; this module
says what a set supplies: its pending entries and the call each makes (the very call the
live path makes first, benchmark.engine.enrichment.batch_enrichment_request), and how
answers are recorded: a chunk at a time (batch_jobs.answers_store), each answer in the same
transaction as its accounting row, keyed by batch and request
(jobs.services.batches.answer_key), so a poller killed at any point loses nothing and pays
nothing twice. A batch answer is validated as a live one is; an unusable one is not repaired
(that would take another batch, a day more): the entry fails with the reason, its answer is
dropped from the response cache, and "retry failed" asks afresh. An entry resent live takes
the live path whole, repairs included.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from functools import partial

from django.utils import timezone

from benchmark.engine.enrichment import batch_enrichment_request, entry_from_answer
from benchmark.models import BenchmarkEntry, BenchmarkSet, EntryStatus, ModelCall
from benchmark.services import cases
from jobs.models import ProviderBatch
from jobs.services import accounting, batch_jobs, batches
from jobs.services.leases import LeasedTask
from llm.clients import model_router
from llm.engine.chat import ChatRequest, ChatResponse
from llm.engine.providers.batches import BatchReceipt, BatchResult
from llm.engine.structured import InvalidOutput

KIND = "set"  # the job kind benchmark.tasks declares


def enrichment_job_dispatch(
    benchmark_set: BenchmarkSet, send: Callable[[list[LeasedTask]], None]
) -> None:
    """The dispatch of every set: a batch set's poll, or the live window."""
    if benchmark_set.batch:
        enrichment_batch_poll(benchmark_set)
    else:
        cases.enrichment_dispatch(benchmark_set, send)


def enrichment_batch_poll(benchmark_set: BenchmarkSet) -> None:
    """Record what the set's batches answered, send its pending entries in new batches (or
    live), and finish the set once none is pending. Does nothing while another poller
    holds it."""
    if batch_jobs.batch_job_poll(benchmark_set, _work(benchmark_set)):
        cases.benchmark_set_finish_if_done(benchmark_set)


def _work(benchmark_set: BenchmarkSet) -> batch_jobs.BatchWork:
    return batch_jobs.BatchWork(
        kind=KIND,
        # The live path always lets the cache answer (a set's seeds are its own samples).
        router=lambda: model_router(True),
        pending=partial(_pending, benchmark_set),
        requests_of=_requests_of,
        record_chunk=_results_record,
        cached=_cached_record,
        failed=_failed,
        live=cases.entry_enrich,
        limit_reached=partial(cases.benchmark_set_over_limit, benchmark_set),
    )


def batch_progress(benchmark_set: BenchmarkSet) -> list[dict]:
    """The set's batches, for its page and the API."""
    return batches.batch_rows(KIND, benchmark_set.pk)


# --- sending ----------------------------------------------------------------------------------


def _pending(benchmark_set: BenchmarkSet, skip: set[int]) -> Iterator[batch_jobs.Unit]:
    pending = benchmark_set.entries.filter(status=EntryStatus.PENDING).exclude(pk__in=skip)
    entries = pending.select_related("benchmark_set").order_by("pk")
    for entry in entries.iterator(chunk_size=500):
        yield batch_jobs.Unit(
            pk=entry.pk,
            model=entry.generator_model,
            request=partial(_request, entry),
            last_error=entry.failure_reason,
        )


def _request(entry: BenchmarkEntry) -> ChatRequest:
    return batch_enrichment_request(
        entry.seed,
        model=entry.generator_model,
        today=entry.benchmark_set.created_at.date(),
        sample=f"set-seed:{entry.benchmark_set.sampler_seed}/entry:{entry.index}",
    )


def _requests_of(batch: ProviderBatch) -> Mapping[str, ChatRequest]:
    """The requests behind a batch's custom ids, built again as they were sent (only for the
    offline scripts, and batches sent before receipts were kept: BatchReceipt)."""
    entries = BenchmarkEntry.objects.select_related("benchmark_set").in_bulk(
        list(batch.requests.values())
    )
    return {
        custom_id: _request(entries[pk])
        for custom_id, pk in batch.requests.items()
        if pk in entries
    }


def _cached_record(unit: batch_jobs.Unit, receipt: BatchReceipt, response: ChatResponse) -> None:
    attempts = BenchmarkEntry.objects.filter(pk=unit.pk).values_list("attempts", flat=True)
    # One key per entry and attempt: an entry retried and answered from the cache again is a
    # new (free) call.
    text = f"cache:entry:{unit.pk}:{attempts.first() or 0}"
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    _answers_store([batch_jobs.Answer(unit.pk, response, receipt, key)])


def _failed(entry_id: int, reason: str) -> None:
    BenchmarkEntry.objects.filter(pk=entry_id, status=EntryStatus.PENDING).update(
        status=EntryStatus.FAILED, failure_reason=reason[:2000], updated_at=timezone.now()
    )


# --- recording --------------------------------------------------------------------------------


def _results_record(batch: ProviderBatch, chunk: list[tuple[BatchResult, BatchReceipt]]) -> None:
    answers, unanswered = batch_jobs.results_split(batch, chunk)
    # Sent again (in a later batch, or live); the reason stays on the row for the page.
    pending = BenchmarkEntry.objects.filter(status=EntryStatus.PENDING)
    batch_jobs.unanswered_note(pending, "failure_reason", unanswered)
    _answers_store(answers)


def _answers_store(answers: list[batch_jobs.Answer]) -> None:
    """Record answers once each (batch_jobs.answers_store): their accounting rows and the
    entries' spend whatever the entries' state (the calls were paid either way), their
    outcome only while pending."""
    entries = BenchmarkEntry.objects.select_related("benchmark_set")
    batch_jobs.answers_store(entries, answers, row=_row, apply=_answer_apply)


def _row(entry: BenchmarkEntry, answer: batch_jobs.Answer):
    owner = partial(ModelCall, benchmark_set_id=entry.benchmark_set_id)
    return accounting.answer_row(owner, "enrichment", answer.response, answer.key)


def _answer_apply(entry: BenchmarkEntry, answer: batch_jobs.Answer) -> list[str]:
    """Set one answer's spend and, while the entry is pending, its outcome on the (locked)
    entry; returns the fields set."""
    response = answer.response
    entry.cost_usd = _cost_after(entry, response.cost_usd)
    entry.attempts += 1
    entry.input_tokens += response.usage.input_tokens
    entry.output_tokens += response.usage.output_tokens
    entry.updated_at = timezone.now()  # a bulk UPDATE sets no auto_now field itself
    changed = ["attempts", "input_tokens", "output_tokens", "cost_usd", "updated_at"]
    if entry.status == EntryStatus.PENDING:
        changed += _outcome(entry, response, answer.receipt)
    return changed


def _cost_after(entry: BenchmarkEntry, cost: Decimal | None) -> Decimal | None:
    """The entry's cost with one more answer's: the first answer starts it, and an unknown
    price anywhere makes it unknown, never a smaller known number."""
    if entry.attempts == 0:
        return cost
    if cost is None or entry.cost_usd is None:
        return None
    return entry.cost_usd + cost


def _outcome(entry: BenchmarkEntry, response: ChatResponse, receipt: BatchReceipt) -> list[str]:
    """Set the entry's outcome for one answer, judged as the live path judges each answer;
    returns the fields it set."""
    entry.raw_responses = [*entry.raw_responses, response.text]
    try:
        data = entry_from_answer(response, entry.seed, today=entry.benchmark_set.created_at.date())
    except InvalidOutput as error:
        # Never replayed from the cache: a retry of the entry asks the model afresh.
        model_router(True).client_for(entry.generator_model).receipt_forget(receipt)
        entry.status, entry.failure_reason = EntryStatus.FAILED, f"invalid (batch): {error}"
        return ["raw_responses", "status", "failure_reason"]
    entry.status, entry.failure_reason = EntryStatus.READY, ""
    entry.profile = data["patient_profile"]
    entry.story = data["patient_story"]
    entry.complexity = data["scenario_complexity"]
    return ["raw_responses", "status", "failure_reason", "profile", "story", "complexity"]
