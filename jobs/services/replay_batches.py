"""Batch mode for jobs whose units make several dependent model calls (the rubric lab's
stages), by "cache replay": one request per unit does not fit them, since a unit's next call
depends on the answer to its last.

Each look of the job's poll (jobs.services.batch_jobs) replays every pending unit that waits
for no request: its own live code runs with a client (`ReplayClient`) that answers from what
the unit's batches answered, then from the response cache when the job reads it. At the
first call it cannot answer, the client notes the request (a ReplayRequest row) and stops the
unit (`ReplayMiss`). The shared poll sends those rows in batches like any other unit; each
answer is stored on its row as it is recorded (and fills the response cache, ModelClient.
batch_results), so the next look replays the unit one call further. Reading a unit's own
answers from its rows means an answer the cache lost is never bought again, and a job that
reads no cache (use_cache off) still moves. A unit whose replay runs to its end is recorded
by its live code, exactly as the live path records it.

Money: an answer is accounted when its batch result is recorded, at the batch price, keyed by
batch and request (batches.answer_key), in one transaction with its row's state: once, however
often a poller dies. The replay reads it back as a cached (free) call under that same key
(ChatResponse.accounted_as), so the live code's own records (a stage's cost) show it as cached,
the unit's spend holds its price, and the paid accounting row is the call's only one.

A worker killed during a replay leaves the unit's lease to run out (the live code's own
lease) and the next look replays it again from the start, as the live path's watch does; a
replay writes nothing that a replay from the start does not redo or skip.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from functools import partial

from django.db import transaction

from jobs.models import ProviderBatch, ReplayRequest, ReplayState
from jobs.services import batch_jobs, batches
from llm.clients import ModelRouter, model_router
from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError, ToolCall, ToolSpec
from llm.engine.providers import cache
from llm.engine.providers.batches import BatchReceipt, BatchResult
from llm.engine.providers.redaction import failure_text
from llm.services import prices


class ReplayMiss(BaseException):  # noqa: N818 - a signal, like GeneratorExit, not a fault
    """The call the cache could not answer: it ends the unit's replay at once. Not an
    Exception, so the live code's own `except Exception` (which fails a unit on a bug) lets it
    through instead of failing the unit."""


class ReplayClient:
    """A chat client that answers only from what the unit's batches answered (`answers`: the
    request's `request_key` -> the answer's JSON and the key it was paid under) or else from
    the response cache (when the job reads it); a call neither answers is noted in `misses`
    (each thread of a unit may note one) and raises ReplayMiss. Every answer comes back
    marked cached, free: it was paid when its batch result was recorded."""

    def __init__(self, router: ModelRouter, answers: Mapping[str, tuple[str, str]] | None = None):
        self._router = router
        self._answers = answers or {}
        self._lock = threading.Lock()
        self.misses: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatResponse:
        stored = self._answers.get(request_key(request))
        if stored is not None:
            answer, paid_key = stored
            return replace(cache.response_from_json(answer), accounted_as=paid_key)
        answer = self._router.client_for(request.model).cached_answer(request)
        if answer is None:
            with self._lock:
                self.misses.append(request)
            raise ReplayMiss(request.purpose)
        return answer

    def forget(self, request: ChatRequest) -> None:
        self._router.forget(request)


@dataclass(frozen=True)
class ReplayWork:
    """What one job of a kind supplies: its units and how to replay and record them."""

    kind: str  # the job kind its tasks module declares
    job: batch_jobs.BatchJob
    # The pending units (primary keys) that wait for no request (`waiting`), in order.
    ready: Callable[[set[int]], Iterable[int]]
    # Run the unit's live code with the client; a ReplayMiss passes through, and leaves the
    # unit pending and free for the next replay.
    replay: Callable[[int, ReplayClient], None]
    # The accounting row (and the unit's spend) of one paid answer, once per key; called
    # inside the transaction that marks the request answered.
    answer_record: Callable[[int, str, ChatResponse, str], None]
    unit_failed: Callable[[int, str], None]  # a unit that will get no answer, with the reason
    limit_reached: Callable[[], bool]
    running: Callable[[], bool]  # whether the job still runs (a cancelled job replays nothing)
    use_cache: bool = True  # the job's: whether a replay may take an answer the cache holds


def replay_batch_poll(work: ReplayWork) -> bool:
    """One look of the job's poll (batch_jobs.batch_job_poll): record what ended, replay the
    units, send what they missed. False when another poller holds the job."""
    return batch_jobs.batch_job_poll(work.job, _batch_work(work))


def _batch_work(work: ReplayWork) -> batch_jobs.BatchWork:
    return batch_jobs.BatchWork(
        kind=work.kind,
        router=partial(_router, work.use_cache),
        pending=partial(_pending, work),
        requests_of=_requests_of,
        record=partial(_result_record, work),
        note=_purpose,
        cached=_cached_record,
        failed=partial(_failed, work),
        live=partial(_live, work),
        limit_reached=work.limit_reached,
        recorded=partial(_replay_round, work),
    )


def _router(use_cache: bool) -> ModelRouter:
    return model_router(use_cache, overrides=prices.price_overrides())


def job_requests(kind: str, job_id: int):
    return ReplayRequest.objects.filter(job_kind=kind, job_id=job_id)


def waiting_counts(kind: str, job_id: int) -> dict[str, int]:
    """How many requests of the job wait for a batch, were answered, got none (the page)."""
    counts = dict.fromkeys(ReplayState.values, 0)
    for state in job_requests(kind, job_id).values_list("state", flat=True):
        counts[state] += 1
    return counts


# --- replaying ----------------------------------------------------------------------------------


def _replay_round(work: ReplayWork) -> None:
    """Replay every ready unit once; store what each missed, for the send that follows."""
    if not work.running() or work.limit_reached():
        return
    router = _router(work.use_cache)
    requests = job_requests(work.kind, work.job.pk)
    waiting = set(requests.filter(state=ReplayState.PENDING).values_list("unit_id", flat=True))
    for unit_id in list(work.ready(waiting)):
        client = ReplayClient(router, _answers(requests.filter(unit_id=unit_id)))
        with contextlib.suppress(ReplayMiss):  # its misses are stored below
            work.replay(unit_id, client)
        ReplayRequest.objects.bulk_create(
            ReplayRequest(
                job_kind=work.kind,
                job_id=work.job.pk,
                unit_id=unit_id,
                model=request.model,
                request=request_data(request),
            )
            for request in client.misses
        )


def _answers(rows) -> dict[str, tuple[str, str]]:
    answered = rows.filter(state=ReplayState.ANSWERED).exclude(answer="")
    return {
        request_key(request_from_data(data)): (answer, key)
        for data, answer, key in answered.values_list("request", "answer", "answer_key")
    }


# --- what the shared poll asks -----------------------------------------------------------------


def _pending(work: ReplayWork, skip: set[int]) -> Iterator[batch_jobs.Unit]:
    pending = job_requests(work.kind, work.job.pk).filter(state=ReplayState.PENDING)
    for row in pending.exclude(pk__in=skip).order_by("pk").iterator(chunk_size=500):
        yield batch_jobs.Unit(
            pk=row.pk,
            model=row.model,
            request=partial(request_from_data, row.request),
            last_error=row.error,
        )


def _requests_of(batch: ProviderBatch) -> Mapping[str, ChatRequest]:
    rows = ReplayRequest.objects.in_bulk(list(batch.requests.values()))
    return {
        custom_id: request_from_data(rows[pk].request)
        for custom_id, pk in batch.requests.items()
        if pk in rows
    }


def _purpose(request: ChatRequest) -> str:
    """What a replay keeps of a request to record its answer (BatchReceipt.note)."""
    return request.purpose


def _result_record(
    work: ReplayWork, batch: ProviderBatch, result: BatchResult, receipt: BatchReceipt
) -> None:
    pk = batch.requests.get(result.custom_id)
    if pk is None:
        return
    if result.response is None:  # sent again (a later batch, or live); the reason for the page
        error = f"batch request {result.error_kind}: {result.error}"[:2000]
        ReplayRequest.objects.filter(pk=pk, state=ReplayState.PENDING).update(error=error)
        return
    key = batches.answer_key(batch, result.custom_id)
    _answered(work, pk, receipt.note, result.response, key=key)


def _answered(work: ReplayWork, pk: int, purpose: str, response: ChatResponse, *, key: str) -> None:
    """Account for one answer once (whatever the row's state: it was paid either way) and
    mark its request answered, in one transaction."""
    with transaction.atomic():
        row = ReplayRequest.objects.select_for_update().filter(pk=pk).first()
        if row is None:
            return
        work.answer_record(row.unit_id, purpose, response, key)
        if row.state == ReplayState.PENDING:
            row.state, row.error, row.answer_key = ReplayState.ANSWERED, "", key
            row.answer = cache.response_to_json(response)
            row.save(update_fields=["state", "error", "answer", "answer_key"])


def _cached_record(unit: batch_jobs.Unit, receipt: BatchReceipt, response: ChatResponse) -> None:
    """The cache answers it now (filled since it was missed): free, and the replay reads it."""
    ReplayRequest.objects.filter(pk=unit.pk, state=ReplayState.PENDING).update(
        state=ReplayState.ANSWERED, error="", answer=cache.response_to_json(response)
    )


def _failed(work: ReplayWork, pk: int, reason: str) -> None:
    """No answer will come: the unit fails with the reason, and its other waiting requests
    are dropped with it."""
    unit_id = ReplayRequest.objects.filter(pk=pk).values_list("unit_id", flat=True).first()
    if unit_id is None:
        return
    rows = job_requests(work.kind, work.job.pk).filter(unit_id=unit_id, state=ReplayState.PENDING)
    rows.update(state=ReplayState.FAILED, error=reason[:2000])
    work.unit_failed(unit_id, reason)


def _live(work: ReplayWork, pk: int) -> None:
    """The request a batch left unanswered, called live at the list price (the researcher
    chose this over another batch); the answer fills the cache for the next replay."""
    row = ReplayRequest.objects.filter(pk=pk, state=ReplayState.PENDING).first()
    if row is None:
        return
    request = request_from_data(row.request)
    try:
        response = _router(work.use_cache).chat(request)
    except ProviderError as error:
        _failed(work, pk, f"live resend failed: {failure_text(error)}")
        return
    key = hashlib.sha256(f"live:{work.kind}:{pk}".encode()).hexdigest()[:32]
    _answered(work, pk, request.purpose, response, key=key)


# --- a request as stored ------------------------------------------------------------------------


def request_data(request: ChatRequest) -> dict:
    """The request's fields as JSON-safe data (tuples become lists)."""
    return asdict(request)


def request_key(request: ChatRequest) -> str:
    """The request told apart from every other (all its fields), for the unit's answers."""
    return cache.canonical_json(request_data(request))


def request_from_data(data: dict) -> ChatRequest:
    """The request stored by `request_data`, equal to the one that was made."""
    fields = dict(data)
    fields["messages"] = tuple(_message(m) for m in data["messages"])
    fields["tools"] = tuple(ToolSpec(**tool) for tool in data["tools"])
    return ChatRequest(**fields)


def _message(data: dict) -> Message:
    fields = dict(data)
    fields["tool_calls"] = tuple(ToolCall(**call) for call in data["tool_calls"])
    fields["reasoning_blocks"] = tuple(data["reasoning_blocks"])
    return Message(**fields)
