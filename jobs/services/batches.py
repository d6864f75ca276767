"""Jobs whose model calls go through a provider's batch API (llm.engine.providers.batches):
the record of each batch a job sent (jobs.models.ProviderBatch), the poll that records its
results as they arrive, and the lease that lets one poller at a time look after a job.

A job kind supplies what only it knows: the requests behind a batch's custom ids (to read and
cache the answers) and how to record one result (its unit's outcome and the call's accounting
row, keyed by `answer_key`, so a result recorded twice is recognised and paid once). The
units of a batch that got no answer (errored, expired, cancelled, or never named in a batch
that failed whole) leave the batch once it is recorded, and the job sends them again.

Crash safety: a batch's row is written (SUBMITTING) with its tag before the provider is asked
(every custom id starts with the tag; OpenAI's batch carries it in its metadata, and its
uploaded input file's id is stored before the batch is made) and names its batch id once the
provider answers. A poller that finds a row still SUBMITTING under its own lease knows its
submitter died in between: it looks for the batch among the provider's own (`batch_adopt`)
and adopts it, or marks the row LOST when the provider made none, and its units go out again.
Results are recorded one transaction each; a poller killed half-way leaves the batch ENDED
and the next one records the rest, skipping what is recorded.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import Counter
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
from llm.engine.providers.batches import BatchResult
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

RequestsOf = Callable[[ProviderBatch], Mapping[str, ChatRequest]]
# Records one result of a batch, given the request it answers.
Record = Callable[[ProviderBatch, BatchResult, ChatRequest], None]


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
    return ProviderBatch.objects.filter(job_kind=kind, job_id=job_id)


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
    """How many batches each unit of the job was sent in."""
    rows = job_batches(kind, job_id).values_list("requests", flat=True)
    return Counter(pk for requests in rows for pk in requests.values())


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
) -> ProviderBatch:
    """Send (unit pk, request) pairs of one model as one batch, recorded first: each custom id
    is the row's tag and the unit's pk."""
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
    row.requests = {custom_id: pk for (custom_id, _), (pk, _) in zip(sent, requests, strict=True)}
    row.save(update_fields=["tag", "requests"])
    try:
        batch_id = client.batch_submit(sent, tag=row.tag, uploaded=partial(_file_stored, row))
    except ProviderError as error:
        # Refused before it was made: nothing was paid, the units go out again later.
        _lost(row, failure_text(error))
        return row
    row.batch_id, row.state = batch_id, BatchState.IN_PROGRESS
    row.counts = {"processing": len(requests)}
    row.save(update_fields=["batch_id", "state", "counts"])
    return row


def _file_stored(row: ProviderBatch, file_id: str) -> None:
    row.input_file_id = file_id
    row.save(update_fields=["input_file_id"])


# --- polling ----------------------------------------------------------------------------------


def batch_poll(
    batch: ProviderBatch, client: ModelClient, *, requests_of: RequestsOf, record: Record
) -> None:
    """Look at one open batch: store its state and counts; once it has ended, record every
    result (`record`, one at a time) and mark it recorded. Called under the job's poll lease."""
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
    newly_ended = batch.state != BatchState.ENDED
    if newly_ended:
        batch.state, batch.ended_at = BatchState.ENDED, timezone.now()
    with transaction.atomic():  # the end and its announcement (webhooks) commit together
        batch.save(update_fields=["counts", "detail", "error", "state", "ended_at"])
        if newly_ended:
            batch_ended_send(batch)
    requests = requests_of(batch)
    try:
        for result in client.batch_results(batch.batch_id, requests):
            record(batch, result, requests[result.custom_id])
    except ProviderError as error:
        batch.error = failure_text(error)  # read again at the next look
        batch.save(update_fields=["error"])
        return
    batch.state, batch.recorded_at = BatchState.RECORDED, timezone.now()
    batch.save(update_fields=["state", "recorded_at"])


def batch_adopt(batch: ProviderBatch, client: ModelClient) -> None:
    """A batch whose submitter died before storing its id: adopt the one the provider made
    of it (polled from the next look on), or mark it LOST when the provider made none; while
    the provider cannot tell yet (an Anthropic batch made since is still running), wait."""
    if not batch.tag:  # sent before batches carried tags: nothing to look for
        _lost(batch, "its worker stopped before the provider named the batch")
        return
    since = batch.submitted_at - ADOPTION_SKEW
    try:
        found = client.batch_find(batch.tag, since=since, input_file_id=batch.input_file_id)
    except ProviderError as error:
        batch.error = failure_text(error)  # looked for again at the next look
        batch.save(update_fields=["error"])
        return
    if found.batch_id:
        batch.batch_id, batch.state, batch.error = found.batch_id, BatchState.IN_PROGRESS, ""
        batch.detail = "adopted"
        batch.save(update_fields=["batch_id", "state", "error", "detail"])
    elif found.undecided:
        batch.detail = "looking for it"
        batch.save(update_fields=["detail"])
    else:
        _lost(batch, "its worker stopped before the provider made the batch")


def _lost(batch: ProviderBatch, reason: str) -> None:
    batch.state, batch.error, batch.recorded_at = BatchState.LOST, reason, timezone.now()
    batch.save(update_fields=["state", "error", "recorded_at"])


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
