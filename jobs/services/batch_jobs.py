"""A job in batch mode (jobs.models.BatchMode): its model calls go through the providers'
batch APIs instead of one live call per worker task. The job kind says what only it knows
(`BatchWork`): its pending units and the request each makes, how to record an answer, a
failure and a cached answer, and its live path; this module does the rest, the same for
every kind (scoring, case enrichment).

The job's watch is the periodic poll (`batch_job_poll`): under the job's poll lease it looks
at every open batch and records the answers of those that ended (jobs.services.batches),
then sends the pending units that are in no open batch: those the response cache answers at
once, the rest in new batches, one model at a time. A unit a batch gave no answer (errored,
expired, cancelled) goes out again: in a later batch, up to BATCH_ATTEMPTS batches, then it
fails; or live, once, when the job says `batch_resend_live`. A batch the provider refused or
never made is no attempt (nothing came back to resend live): its units go out in another
batch, and fail after BATCH_ATTEMPTS such refusals. A batch answer is validated as
a live one is; an unusable one is not repaired (that would take another batch). An ended
batch's answers are best recorded a chunk at a time (`record_chunk`: `results_split`, then
`answers_store`), in a fixed few statements per chunk (issue 34).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from django.db import transaction
from django.db.models import Model, QuerySet

from common.updates import rows_update
from jobs.models import JobStatus, ModelCallRecord, ProviderBatch
from jobs.services import accounting, batches
from llm.clients import ModelRouter
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError
from llm.engine.providers.batches import BatchReceipt, BatchResult
from llm.engine.providers.client import ModelClient
from llm.engine.providers.redaction import failure_text

# Batches a unit may go out in before it fails (a relaunch or a retry tries it again).
BATCH_ATTEMPTS = 3


class BatchJob(Protocol):
    """A job in batch mode (jobs.models.BatchMode): a scoring job, a case set."""

    pk: int
    status: str
    batch_resend_live: bool

    def refresh_from_db(self, *, fields: list[str]) -> None: ...


@dataclass(frozen=True)
class Unit:
    """A pending unit of the job: its primary key, the model it asks, the request it makes
    (built only when it is sent) and the reason its last batch gave no answer."""

    pk: int
    model: str
    request: Callable[[], ChatRequest]
    last_error: str = ""


@dataclass(frozen=True)
class BatchWork:
    """What one job of a kind supplies to the shared poll."""

    kind: str  # the job kind its tasks module declares (the watch's)
    router: Callable[[], ModelRouter]  # the job's, with its cache flag and prices
    # The pending units, in an order that keeps a unit's neighbours together, less `skip`.
    pending: Callable[[set[int]], Iterable[Unit]]
    # The requests behind a batch's custom ids, built again as they were sent (for the
    # offline scripts, which answer from them, and batches sent before receipts were kept).
    requests_of: Callable[[ProviderBatch], Mapping[str, ChatRequest]]
    cached: Callable[[Unit, BatchReceipt, ChatResponse], None]  # an answer from the cache
    failed: Callable[[int, str], None]  # a unit that will get no answer
    live: Callable[[int], None]  # the unit's live path, in this process
    limit_reached: Callable[[], bool]  # the job's cost limit (pauses it)
    recorded: Callable[[], None] = lambda: None  # after the batches are looked at
    # Record one batch result once (keyed by batches.answer_key); an error result leaves
    # the unit pending, with the reason for the page. Or, better, `record_chunk`: a chunk of
    # results at once, in a fixed few statements (`results_split`, `answers_store`).
    record: batches.Record | None = None
    record_chunk: batches.RecordChunk | None = None
    # What the kind keeps of a request to record its answer (BatchReceipt.note).
    note: batches.Note = lambda request: ""


def batch_job_poll(job: BatchJob, work: BatchWork) -> bool:
    """Record what the job's batches answered and send what is pending; False when another
    poller holds the job (this one did nothing). The caller finishes the job when done."""
    token = batches.poll_lease_claim(work.kind, job.pk)
    if token is None:
        return False
    try:
        router = work.router()
        for batch in batches.open_batches(work.kind, job.pk):
            # Recording a large batch takes a while: the lease is renewed batch by batch.
            if not batches.poll_lease_extend(work.kind, job.pk, token):
                return True
            _batch_look(batch, router, work)
        work.recorded()
        job.refresh_from_db(fields=["status"])
        held = batches.poll_lease_extend(work.kind, job.pk, token)
        if held and job.status == JobStatus.RUNNING and not work.limit_reached():
            live = _pending_send(job, router, work, token)
            _live_send(job, work, token, live)
    except _LeaseLost:
        pass  # the poller that took the job over sends the rest
    finally:
        batches.poll_lease_release(work.kind, job.pk, token)
    return True


class _LeaseLost(Exception):
    """The poll lease ran out during a long send and another poller took the job over."""


def _batch_look(batch: ProviderBatch, router: ModelRouter, work: BatchWork) -> None:
    try:
        client = router.client_for(batch.model)
    except ProviderError as error:  # its key was removed since: looked at again later
        batch.error = failure_text(error)
        batch.save(update_fields=["error"])
        return
    batches.batch_poll(
        batch,
        client,
        requests_of=work.requests_of,
        record=work.record,
        record_chunk=work.record_chunk,
        note=work.note,
    )


def _pending_send(job: BatchJob, router: ModelRouter, work: BatchWork, token: str) -> list[int]:
    """Send the pending units in new batches; returns those to resend live instead."""
    waiting = batches.units_in_flight(work.kind, job.pk)
    attempts = batches.unit_attempts(work.kind, job.pk)
    refusals = batches.unit_refusals(work.kind, job.pk)
    by_model: dict[str, list[tuple[int, ChatRequest, BatchReceipt]]] = defaultdict(list)
    send = partial(_batch_send, job, work, token)
    live = []
    for unit in work.pending(waiting):
        sent, refused = attempts[unit.pk], refusals.get(unit.pk, [])
        if sent and job.batch_resend_live:
            live.append(unit.pk)
            continue
        if sent >= BATCH_ATTEMPTS:
            work.failed(unit.pk, f"no answer after {sent} batches: {unit.last_error or 'none'}")
            continue
        if len(refused) >= BATCH_ATTEMPTS:
            work.failed(unit.pk, f"no batch made in {len(refused)} tries: {refused[-1]}")
            continue
        try:
            client = router.client_for(unit.model)
        except ProviderError as error:  # no key, a model string it cannot call: said so
            work.failed(unit.pk, failure_text(error))
            continue
        request = unit.request()
        receipt = client.batch_receipt(request, work.note(request))
        answer = client.receipt_answer(receipt)
        if answer is not None:
            work.cached(unit, receipt, answer)
            continue
        queued = by_model[unit.model]
        queued.append((unit.pk, request, receipt))
        # Sent as soon as a batch is full: a large job never holds all its prompts at once.
        if len(queued) == batches.MAX_BATCH_REQUESTS:
            send(client, by_model.pop(unit.model))
    for model, requests in by_model.items():
        send(router.client_for(model), requests)
    return live


def _batch_send(
    job: BatchJob,
    work: BatchWork,
    token: str,
    client: ModelClient,
    queued: list[tuple[int, ChatRequest, BatchReceipt]],
) -> None:
    """One batch, under a freshly renewed lease: an upload can be slow, and a poller that
    lost the lease meanwhile must not send what the one that took the job over sends too."""
    if not batches.poll_lease_extend(work.kind, job.pk, token):
        raise _LeaseLost
    batches.batch_submit(
        kind=work.kind,
        job_id=job.pk,
        client=client,
        requests=[(pk, request) for pk, request, _ in queued],
        receipts=[receipt for _, _, receipt in queued],
    )


def _live_send(job: BatchJob, work: BatchWork, token: str, units: list[int]) -> None:
    """The units a batch left unanswered, called live one after another (the researcher
    chose this over waiting for another batch); the lease is renewed call by call."""
    for pk in units:
        if not batches.poll_lease_extend(work.kind, job.pk, token):
            return
        work.live(pk)


# --- recording answers in chunks ---------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One answer to record: its unit's primary key, the answer, the receipt of the request
    it answers and its accounting key (batches.answer_key, or a cached answer's own)."""

    pk: int
    response: ChatResponse
    receipt: BatchReceipt
    key: str


def results_split(
    batch: ProviderBatch, chunk: list[tuple[BatchResult, BatchReceipt]]
) -> tuple[list[Answer], dict[str, list[int]]]:
    """A chunk of the batch's results as the answers to record and, by reason, the units that
    got none (left pending, sent again); a custom id the batch does not name is skipped."""
    answers: list[Answer] = []
    unanswered: dict[str, list[int]] = defaultdict(list)
    for result, receipt in chunk:
        pk = batch.requests.get(result.custom_id)
        if pk is None:
            continue
        if result.response is None:
            unanswered[f"batch request {result.error_kind}: {result.error}"[:2000]].append(pk)
        else:
            key = batches.answer_key(batch, result.custom_id)
            answers.append(Answer(pk, result.response, receipt, key))
    return answers, unanswered


def unanswered_note(pending: QuerySet, field: str, unanswered: Mapping[str, list[int]]) -> None:
    """Store on each pending unit why its batch gave it no answer (for the page): one UPDATE
    per reason, and a chunk's unanswered requests mostly share one."""
    for reason, pks in unanswered.items():
        pending.filter(pk__in=pks).update(**{field: reason})


def answers_store(
    units: QuerySet,
    answers: Sequence[Answer],
    *,
    row: Callable[[Model, Answer], ModelCallRecord],
    apply: Callable[[Model, Answer], list[str]],
) -> list[Model]:
    """Record each answer once, all in one transaction and a fixed few statements whatever
    their number (issue 34): lock the units, write the accounting rows (`row`) of the answers
    no earlier poll recorded, then `apply` each such answer to its locked unit (its spend
    always: the call was paid either way; its outcome while it is pending), which returns the
    fields it set, and UPDATE the units together. A poller killed meanwhile commits nothing,
    and the next one records the chunk whole. Returns the units changed."""
    if not answers:
        return []
    with transaction.atomic():
        # In key order, so two pollers (a slow one, the one that took over) never deadlock.
        query = units.select_for_update(of=("self",)).filter(pk__in={a.pk for a in answers})
        locked = {unit.pk: unit for unit in query.order_by("pk")}
        answers = [answer for answer in answers if answer.pk in locked]
        if not answers:
            return []
        new = accounting.answers_record([row(locked[a.pk], a) for a in answers])
        changed: dict[int, Model] = {}
        fields: set[str] = set()
        for answer in answers:
            if answer.key not in new:
                continue  # recorded by an earlier poll
            new.discard(answer.key)  # an answer named twice is applied once
            fields.update(apply(locked[answer.pk], answer))
            changed[answer.pk] = locked[answer.pk]
        if changed:
            rows_update(list(changed.values()), sorted(fields))
    return list(changed.values())
