"""Batch APIs behind one small interface: send many chat requests at once, at the provider's
batch price (about half), and collect the answers within the provider's window (24 hours).

An adapter (OpenAI's Batch API, Anthropic's Message Batches, the offline scripts) does three
things: `submit` a list of (custom id, request) and return the provider's batch id, tell a
batch's `status` (its state and request counts), and give its `results` once it has ended,
one per custom id it has an outcome for (`requests`: the awaited ones; only the offline
scripts read the requests themselves, `reads_requests`). A request the provider gave no answer
to (errored, expired with the batch, cancelled) comes back as a `BatchResult` with its
`error_kind`; one it says nothing about at all (a batch that failed as a whole) is missing
from the results: the caller sends both again. Faults of the calls themselves leave as
ProviderError, mapped as the live adapters map them.

A caller that may die between the provider accepting a batch and storing its id gives
`submit` a `tag` (every custom id starts with it) and an `uploaded` callback (told OpenAI's
input file id before the batch is made); `find` later looks for the batch among the
provider's own, so it is adopted instead of sent and paid twice. The search looks at the
batches made between `since` and `until` (when the submit could have made it): an adapter that
cannot read a running batch's requests (Anthropic) would otherwise wait on every later batch of
the account; one that matches a batch exactly (OpenAI, by its input file) may ignore `until`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from llm.engine.chat import ChatRequest, ChatResponse, ProviderError
from llm.engine.providers.offline import OfflineProvider

# A batch still being worked on, or one that ended (its results can be read).
IN_PROGRESS = "in_progress"
ENDED = "ended"
# Why a request of an ended batch has no answer.
ERRORED, EXPIRED, CANCELLED = "errored", "expired", "cancelled"
ERROR_KINDS = (ERRORED, EXPIRED, CANCELLED)
# Anthropic's rule for a custom id, the stricter of the two providers': both take it.
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class BatchStatus:
    """`state`: IN_PROGRESS or ENDED; `counts`: requests by outcome so far (succeeded,
    errored, expired, cancelled, processing); `detail`: the provider's own word for the state
    ("validating", "finalizing", "expired", ...), for the page."""

    state: str
    counts: Mapping[str, int] = field(default_factory=dict)
    detail: str = ""

    @property
    def ended(self) -> bool:
        return self.state == ENDED


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome: its answer, or why there is none (`error_kind`, `error`)."""

    custom_id: str
    response: ChatResponse | None = None
    error_kind: str = ""
    error: str = ""


@dataclass(frozen=True)
class Adoption:
    """What a search of the provider's batches found for a batch whose id was never stored:
    its id; or nothing (it was never made); or `undecided`: a batch that may be it has not
    ended, so its requests cannot be read yet (Anthropic): look again later."""

    batch_id: str = ""
    undecided: bool = False


@dataclass(frozen=True)
class BatchReceipt:
    """What reading a request's batch answer needs of the request, kept when the batch is sent,
    so that reading the answers never builds the requests again (a judge prompt is rendered
    once, issue 34): the response-cache key the answer fills (None with the cache off), the
    seed it was sent with, and `note`: what the caller keeps to record the answer (a judge
    call's prompt hash, a replayed request's purpose)."""

    cache_key: str | None
    seed: int | None
    note: str = ""

    def to_data(self) -> list:
        return [self.cache_key, self.seed, self.note]

    @classmethod
    def from_data(cls, data: Sequence) -> BatchReceipt:
        return cls(*data)


# Told OpenAI's input file id once it is uploaded, before the batch is made of it.
Uploaded = Callable[[str], None]


class BatchProvider(Protocol):
    # Whether `results` reads the requests themselves (the offline scripts compute their
    # answers from them); the providers' APIs only look at which custom ids are awaited.
    reads_requests: bool

    def submit(
        self,
        requests: Sequence[tuple[str, ChatRequest]],
        *,
        tag: str = "",
        uploaded: Uploaded | None = None,
    ) -> str: ...

    def find(
        self,
        tag: str,
        *,
        since: datetime,
        until: datetime | None = None,
        input_file_id: str = "",
    ) -> Adoption: ...

    def status(self, batch_id: str) -> BatchStatus: ...

    def results(
        self, batch_id: str, requests: Mapping[str, ChatRequest]
    ) -> Iterator[BatchResult]: ...


def custom_ids_check(requests: Sequence[tuple[str, ChatRequest]]) -> None:
    """Refuse an empty batch, a custom id a provider would refuse, or one id twice."""
    if not requests:
        raise ProviderError("a batch needs at least one request", kind="bad_request")
    ids = [custom_id for custom_id, _ in requests]
    bad = [custom_id for custom_id in ids if not CUSTOM_ID.match(custom_id)]
    if bad:
        raise ProviderError(
            f"batch custom ids take 1-64 letters, digits, '-' or '_': {bad[0]!r}",
            kind="bad_request",
        )
    if len(set(ids)) != len(ids):
        raise ProviderError("a batch holds each custom id once", kind="bad_request")


def counted(outcomes: Mapping[str, int]) -> dict[str, int]:
    """Request counts in the one vocabulary every adapter reports (zeros left out)."""
    return {name: int(number) for name, number in outcomes.items() if number}


class OfflineBatchProvider:
    """The scripted provider's batches: nothing is sent anywhere. The batch id says how many
    requests it holds; it ends at once, or after `polls_before_end` looks at its status
    (counted per process: the demo and tests see an in-progress batch once), and its results
    are the scripts' answers, computed when they are read (the scripts are deterministic, so
    a worker that reads them twice gets the same answers)."""

    reads_requests = True

    def __init__(self, behaviour: str, *, polls_before_end: int = 0):
        self._chat = OfflineProvider(behaviour)
        self.polls_before_end = polls_before_end
        self._polls: dict[str, int] = {}

    def submit(
        self,
        requests: Sequence[tuple[str, ChatRequest]],
        *,
        tag: str = "",
        uploaded: Uploaded | None = None,
    ) -> str:
        custom_ids_check(requests)
        return f"offline_batch_{len(requests)}_{uuid.uuid4().hex[:16]}"

    def find(
        self,
        tag: str,
        *,
        since: datetime,
        until: datetime | None = None,
        input_file_id: str = "",
    ) -> Adoption:
        # Nothing was sent anywhere, nor paid: a batch whose id was lost is simply made again.
        return Adoption()

    def status(self, batch_id: str) -> BatchStatus:
        size = _offline_size(batch_id)
        seen = self._polls.get(batch_id, 0)
        self._polls[batch_id] = seen + 1
        if seen < self.polls_before_end:
            return BatchStatus(IN_PROGRESS, {"processing": size}, "in_progress")
        return BatchStatus(ENDED, {"succeeded": size}, "ended")

    def results(self, batch_id: str, requests: Mapping[str, ChatRequest]) -> Iterator[BatchResult]:
        _offline_size(batch_id)
        for custom_id, request in requests.items():
            try:
                yield BatchResult(custom_id, response=self._chat.chat(request))
            except ProviderError as error:
                yield BatchResult(custom_id, error_kind=ERRORED, error=str(error))


def _offline_size(batch_id: str) -> int:
    prefix, _, rest = batch_id.partition("offline_batch_")
    size, _, _ = rest.partition("_")
    if prefix or not size.isdigit():
        raise ProviderError(f"no offline batch {batch_id!r}", kind="bad_request")
    return int(size)
