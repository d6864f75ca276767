"""Jobs whose model calls go through a provider's batch API (llm.engine.providers.batches):
the record of each batch a job sent (jobs.models.ProviderBatch), the poll that records its
results as they arrive, and the lease that lets one poller at a time look after a job.

A job kind supplies what only it knows: what to keep of each request when a batch is sent (its
receipt's note: reading the answers then builds no request again), the requests behind a
batch's custom ids (for the offline scripts, which answer from them, and batches sent before
receipts were kept) and how to record one result (its unit's outcome and the call's accounting
row, keyed by `answer_key`, so a result recorded twice is recognised and paid once). The
units of a batch that got no answer (errored, expired, cancelled, or never named in a batch
that failed whole) leave the batch once it is recorded, and the job sends them again.

Crash safety: a batch's row is written (SUBMITTING) with its tag before the provider is asked
(every custom id starts with the tag; OpenAI's batch carries it in its metadata, and its
uploaded input file's id is stored before the batch is made) and names its batch id once the
provider answers. A row still SUBMITTING a lease after it was written lost its submitter in
between (or the submit got no answer: a timeout, a dropped connection, a 5xx, after which the
provider may still have made the batch): the poller looks for the batch among the provider's
own (`batch_adopt`) and adopts it, or marks the row LOST when the provider made none, and its
units go out again. Each move of a row (adopted, lost, ended,
recorded, and the submitter's own store of the batch id) is a conditional update from the
state it was read in, so a submitter that was slow but alive and the poller that took its row
over never both win, and a batch's end is announced once.
Results are recorded in chunks of RECORD_CHUNK, one transaction each (or one at a time, for a
kind that records them so); a poller killed half-way leaves the batch ENDED and the next one
records the rest, skipping what is recorded.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from jobs.models import BatchPollLease, BatchState, ProviderBatch
from jobs.services import watch
from jobs.signals import batch_ended_send
from llm.engine.chat import ChatRequest, ProviderError
from llm.engine.providers.batches import Adoption, BatchReceipt, BatchResult
from llm.engine.providers.client import ModelClient
from llm.engine.providers.model_strings import parse_model_string
from llm.engine.providers.redaction import failure_text

OPEN = (BatchState.SUBMITTING, BatchState.IN_PROGRESS, BatchState.ENDED)
# Requests per batch: far below both providers' limits (OpenAI 50,000, Anthropic 100,000),
# so a batch's results stay a modest download and a lost batch a modest loss.
MAX_BATCH_REQUESTS = 5000
# How far the provider's clock may lag ours: batches made this long before the row are
# looked at when a lost batch is searched for.
ADOPTION_SKEW = timedelta(minutes=10)
# A search still undecided this long after the row was written gives up (the row is LOST and
# its units go out again): every batch that could be the row's was made within minutes of it,
# and the providers end a batch within 24 hours, so by then a search that cannot decide never
# will (a list the key may not read, a provider that keeps a batch running past its window).
ADOPTION_DEADLINE = timedelta(hours=25)
# A submit that got no answer may still have made the batch: the row stays SUBMITTING and the
# search decides. The other faults (a refusal, a rate limit, a bad key) made nothing.
MAYBE_MADE = frozenset({"timeout", "connection", "server", "malformed"})

RequestsOf = Callable[[ProviderBatch], Mapping[str, ChatRequest]]
# Records one result of a batch, given the receipt of the request it answers.
Record = Callable[[ProviderBatch, BatchResult, BatchReceipt], None]
# Records a chunk of a batch's results, each with its request's receipt, in one transaction.
RecordChunk = Callable[[ProviderBatch, list[tuple[BatchResult, BatchReceipt]]], None]
# What a kind keeps of a request to record its answer (BatchReceipt.note).
Note = Callable[[ChatRequest], str]
# Results recorded together: a few statements a chunk rather than a few an answer (issue 34),
# and a chunk's rows and their UPDATE stay a modest statement.
RECORD_CHUNK = 200


# --- who polls ------------------------------------------------------------------------------


def poll_lease_claim(kind: str, job_id: int) -> str | None:
    """A token if this process may poll the job's batches now (until the lease runs out),
    None when another poller holds it."""
    BatchPollLease.objects.get_or_create(job_kind=kind, job_id=job_id)
    now = timezone.now()
    token = secrets.token_hex(16)
    free = Q(held_until__isnull=True) | Q(held_until__lt=now)
    until = now + timedelta(seconds=settings.CONVERSATION_LEASE_SECONDS)
    claimed = BatchPollLease.objects.filter(free, job_kind=kind, job_id=job_id).update(
        held_until=until, token=token
    )
    return token if claimed else None


def poll_lease_extend(kind: str, job_id: int, token: str) -> bool:
    """Hold the lease a whole lease longer; False when it was lost (it ran out and another
    poller took it): the caller stops sending, the other one carries on."""
    until = timezone.now() + timedelta(seconds=settings.CONVERSATION_LEASE_SECONDS)
    held = BatchPollLease.objects.filter(job_kind=kind, job_id=job_id, token=token)
    return bool(held.update(held_until=until))


def poll_lease_release(kind: str, job_id: int, token: str) -> None:
    BatchPollLease.objects.filter(job_kind=kind, job_id=job_id, token=token).update(
        held_until=None, token=""
    )


# --- what is out ------------------------------------------------------------------------------


def job_batches(kind: str, job_id: int) -> QuerySet[ProviderBatch]:
    # The receipts (thousands a batch) are read only to record its answers.
    return ProviderBatch.objects.filter(job_kind=kind, job_id=job_id).defer("receipts")


def poll_seconds() -> float:
    """How often the watch looks at a job with batches still open (BATCH_POLL_SECONDS, or
    the watch's own interval when that is shorter)."""
    return min(max(float(settings.BATCH_POLL_SECONDS), 1.0), watch.interval_seconds())


def open_batches(kind: str, job_id: int) -> QuerySet[ProviderBatch]:
    return job_batches(kind, job_id).filter(state__in=OPEN)


def units_in_flight(kind: str, job_id: int) -> set[int]:
    """The units waiting in a batch that is not recorded yet: not to be sent again."""
    rows = open_batches(kind, job_id).values_list("requests", flat=True)
    return {pk for requests in rows for pk in requests.values()}


def unit_attempts(kind: str, job_id: int) -> Counter[int]:
    """How many batches the provider accepted (named) with each unit of the job in them: one
    it refused or never made is no attempt (`unit_refusals`)."""
    rows = job_batches(kind, job_id).exclude(batch_id="").values_list("requests", flat=True)
    return Counter(pk for requests in rows for pk in requests.values())


def unit_refusals(kind: str, job_id: int) -> dict[int, list[str]]:
    """Why each batch a unit was in came to nothing (LOST: refused by the provider, or never
    made), oldest first, by unit."""
    lost = job_batches(kind, job_id).filter(state=BatchState.LOST).order_by("pk")
    reasons: dict[int, list[str]] = defaultdict(list)
    for requests, error in lost.values_list("requests", "error"):
        for pk in requests.values():
            reasons[pk].append(error)
    return reasons


def answer_key(batch: ProviderBatch, custom_id: str) -> str:
    """The accounting key of a batch answer: the same for every poller that reads it."""
    text = f"{batch.provider}:{batch.batch_id}:{custom_id}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- sending ----------------------------------------------------------------------------------


def batch_submit(
    *,
    kind: str,
    job_id: int,
    client: ModelClient,
    requests: Sequence[tuple[int, ChatRequest]],
    receipts: Sequence[BatchReceipt] | None = None,
) -> ProviderBatch:
    """Send (unit pk, request) pairs of one model as one batch, recorded first with each
    request's receipt (`receipts`, in the same order; made here when not given): each custom
    id is the row's tag and the unit's pk."""
    row = ProviderBatch.objects.create(
        job_kind=kind,
        job_id=job_id,
        provider=parse_model_string(client.model_string).provider,
        model=client.model_string,
    )
    # The random part tells this site's row apart from another site's with the same id that
    # shares the provider account.
    row.tag = f"cj{row.pk}x{secrets.token_hex(4)}"
    sent = [(f"{row.tag}-{pk}", request) for pk, request in requests]
    if receipts is None:
        receipts = [client.batch_receipt(request) for _, request in requests]
    row.requests = {custom_id: pk for (custom_id, _), (pk, _) in zip(sent, requests, strict=True)}
    row.receipts = {
        custom_id: receipt.to_data() for (custom_id, _), receipt in zip(sent, receipts, strict=True)
    }
    row.save(update_fields=["tag", "requests", "receipts"])
    try:
        batch_id = client.batch_submit(sent, tag=row.tag, uploaded=partial(_file_stored, row))
    except ProviderError as error:
        if error.kind in MAYBE_MADE:  # it may exist all the same: batch_adopt looks for it
            _moved(row, BatchState.SUBMITTING, error=failure_text(error), detail="no answer")
        else:  # refused: nothing was made or paid, the units go out again later
            _lost(row, failure_text(error))
        return row
    stored = _moved(
        row,
        BatchState.SUBMITTING,
        batch_id=batch_id,
        state=BatchState.IN_PROGRESS,
        counts={"processing": len(requests)},
    )
    if not stored:  # another poller took the row over meanwhile (adopted it, or lost it)
        row.refresh_from_db()
    return row


def _file_stored(row: ProviderBatch, file_id: str) -> None:
    row.input_file_id = file_id
    row.save(update_fields=["input_file_id"])


# --- polling ----------------------------------------------------------------------------------


def batch_poll(
    batch: ProviderBatch,
    client: ModelClient,
    *,
    requests_of: RequestsOf,
    record: Record | None = None,
    record_chunk: RecordChunk | None = None,
    note: Note = lambda request: "",
) -> None:
    """Look at one open batch: store its state and counts; once it has ended, record every
    result (`record_chunk`, RECORD_CHUNK at a time, when the kind has one; else `record`, one
    at a time), each with its request's receipt, and mark it recorded. The requests are built
    again (`requests_of`) only for a provider that reads them (the offline scripts) or a
    batch sent before receipts were kept (whose receipts are then made with `note`). Called
    under the job's poll lease."""
    if batch.state == BatchState.SUBMITTING:
        batch_adopt(batch, client)
        return
    try:
        status = client.batch_status(batch.batch_id)
    except ProviderError as error:
        batch.error = failure_text(error)  # a fault of the look, not of the batch: look again
        batch.save(update_fields=["error"])
        return
    batch.counts, batch.detail, batch.error = dict(status.counts), status.detail, ""
    if not status.ended:
        batch.save(update_fields=["counts", "detail", "error"])
        return
    if batch.state == BatchState.ENDED:  # a poller died recording it: the rest is recorded now
        batch.save(update_fields=["counts", "detail", "error"])
    elif not _ended(batch):
        return  # another poller ended it, and records it
    requests = AwaitedRequests(batch.requests, partial(requests_of, batch))
    receipts = _receipts(batch, requests, client, note)
    if record_chunk is None:
        if record is None:
            raise TypeError("a batch poll needs `record` or `record_chunk`")
        record_chunk = partial(_one_by_one, record)
    try:
        chunk: list[tuple[BatchResult, BatchReceipt]] = []
        for result in client.batch_results(batch.batch_id, requests, receipts):
            chunk.append((result, receipts[result.custom_id]))
            if len(chunk) == RECORD_CHUNK:
                record_chunk(batch, chunk)
                chunk = []
        if chunk:
            record_chunk(batch, chunk)
    except ProviderError as error:
        batch.error = failure_text(error)  # read again at the next look
        batch.save(update_fields=["error"])
        return
    _moved(batch, BatchState.ENDED, state=BatchState.RECORDED, recorded_at=timezone.now())


class AwaitedRequests(Mapping[str, ChatRequest]):
    """A batch's requests by custom id, built (`build`) only when one is read: the providers'
    batch APIs only ask which custom ids are awaited, and building a job's prompts again
    (a judge's transcript, rendered) would cost as much as sending them did. `in` answers
    from the batch's row, before anything is built: an id whose unit is gone since is still
    awaited (its answer was paid), though it has no request to build; ModelClient's
    batch_results skips a result without a receipt."""

    def __init__(self, custom_ids: Mapping[str, int], build: Callable[[], Mapping]):
        self._custom_ids = custom_ids
        self._build = build
        self._built: Mapping[str, ChatRequest] | None = None

    def __contains__(self, custom_id: object) -> bool:
        return custom_id in self._custom_ids

    def __getitem__(self, custom_id: str) -> ChatRequest:
        return self._requests()[custom_id]

    def __iter__(self):
        return iter(self._requests())

    def __len__(self) -> int:
        return len(self._requests())

    def _requests(self) -> Mapping[str, ChatRequest]:
        if self._built is None:
            self._built = self._build()
        return self._built


def _receipts(
    batch: ProviderBatch, requests: Mapping[str, ChatRequest], client: ModelClient, note: Note
) -> dict[str, BatchReceipt]:
    """The receipts kept when the batch was sent, or (sent before they were kept) made now."""
    kept = batch.receipts
    if kept:
        return {custom_id: BatchReceipt.from_data(data) for custom_id, data in kept.items()}
    return {
        custom_id: client.batch_receipt(request, note(request))
        for custom_id, request in requests.items()
    }


def _one_by_one(
    record: Record, batch: ProviderBatch, chunk: list[tuple[BatchResult, BatchReceipt]]
) -> None:
    for result, receipt in chunk:
        record(batch, result, receipt)


def _ended(batch: ProviderBatch) -> bool:
    """Mark the batch ENDED and announce it (webhooks), both in one commit; False when
    another poller got there first: the end is announced once."""
    with transaction.atomic():
        ended = _moved(
            batch,
            BatchState.IN_PROGRESS,
            state=BatchState.ENDED,
            ended_at=timezone.now(),
            counts=batch.counts,
            detail=batch.detail,
            error="",
        )
        if ended:
            batch_ended_send(batch)
    return ended


def batch_adopt(batch: ProviderBatch, client: ModelClient) -> None:
    """A batch whose submitter died (or got no answer) before storing its id: adopt the one
    the provider made of it (polled from the next look on), or mark it LOST when the provider
    made none. It waits while the submitter may still be at work (the row is younger than a
    lease) and while the provider cannot tell yet (an Anthropic batch made around it is still
    running), up to ADOPTION_DEADLINE."""
    if not batch.tag:  # sent before batches carried tags: nothing to look for
        _lost(batch, "its worker stopped before the provider named the batch")
        return
    now = timezone.now()
    if now - batch.submitted_at < timedelta(seconds=settings.CONVERSATION_LEASE_SECONDS):
        _moved(batch, BatchState.SUBMITTING, detail="waiting for its submitter")
        return
    found = _batch_search(batch, client)
    if found is not None and found.batch_id:
        _moved(
            batch,
            BatchState.SUBMITTING,
            batch_id=found.batch_id,
            state=BatchState.IN_PROGRESS,
            error="",
            detail="adopted",
        )
    elif found is not None and not found.undecided:
        _lost(batch, "its worker stopped before the provider made the batch")
    elif now - batch.submitted_at > ADOPTION_DEADLINE:
        hours = ADOPTION_DEADLINE / timedelta(hours=1)
        _lost(batch, f"not found among the provider's batches within {hours:g} hours")
    elif found is not None:
        _moved(batch, BatchState.SUBMITTING, detail="looking for it")


def _batch_search(batch: ProviderBatch, client: ModelClient) -> Adoption | None:
    """The provider's batches made while the row's submit could have made one (from a skew
    before the row to a submit's time and a skew after it); None when the search failed (the
    fault is stored, and the next look searches again)."""
    until = batch.submitted_at + timedelta(seconds=client.batch_submit_seconds()) + ADOPTION_SKEW
    try:
        return client.batch_find(
            batch.tag,
            since=batch.submitted_at - ADOPTION_SKEW,
            until=until,
            input_file_id=batch.input_file_id,
        )
    except ProviderError as error:
        _moved(batch, BatchState.SUBMITTING, error=failure_text(error))
        return None


def _lost(batch: ProviderBatch, reason: str) -> None:
    """A row whose batch the provider refused or never made (its units go out again), unless
    another poller moved it meanwhile."""
    _moved(
        batch,
        BatchState.SUBMITTING,
        state=BatchState.LOST,
        error=reason,
        recorded_at=timezone.now(),
    )


def _moved(batch: ProviderBatch, was: str, **fields) -> bool:
    """Store `fields` on the row only if it is still in state `was` (read before a provider
    call that may have taken a while, during which another poller may have moved it); True
    when stored, and then the instance carries them too."""
    stored = ProviderBatch.objects.filter(pk=batch.pk, state=was).update(**fields)
    if stored:
        for name, value in fields.items():
            setattr(batch, name, value)
    return bool(stored)


def batch_rows(kind: str, job_id: int) -> list[dict]:
    """A job's batches for its page: model, provider id, state, counts, times."""
    return [
        {
            "model": row.model,
            "batch_id": row.batch_id,
            "state": row.get_state_display(),
            "detail": row.detail,
            "requests": len(row.requests),
            "counts": row.counts,
            "error": row.error,
            "submitted_at": row.submitted_at,
            "ended_at": row.ended_at,
        }
        for row in job_batches(kind, job_id)
    ]
