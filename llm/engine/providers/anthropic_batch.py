"""Anthropic's Message Batches: the requests go in one call (each a custom id and the very
parameters a live call sends, `AnthropicChatProvider.render`), the batch reports its
processing status and request counts, and once it has ended its results stream back one per
request: succeeded (a message, parsed as a live one), errored, cancelled or expired."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from datetime import datetime

import anthropic

from llm.engine.chat import ChatRequest, ProviderError
from llm.engine.providers.anthropic_chat import AnthropicChatProvider, parse_message
from llm.engine.providers.batches import (
    CANCELLED,
    ENDED,
    ERRORED,
    EXPIRED,
    IN_PROGRESS,
    Adoption,
    BatchResult,
    BatchStatus,
    Uploaded,
    counted,
    custom_ids_check,
)
from llm.engine.providers.errors import provider_faults

# A result's type, in the vocabulary of llm.engine.providers.batches.
ERROR_KIND_OF = {"errored": ERRORED, "expired": EXPIRED, "canceled": CANCELLED}


class AnthropicBatchProvider:
    """Batches for one model, through the live adapter's client and request rendering."""

    reads_requests = False  # the results name their custom ids; the requests are not read

    def __init__(self, chat: AnthropicChatProvider, model_string: str):
        self._chat = chat
        self._model_string = model_string
        self._client: anthropic.Anthropic = chat._client

    def submit(
        self,
        requests: Sequence[tuple[str, ChatRequest]],
        *,
        tag: str = "",
        uploaded: Uploaded | None = None,
    ) -> str:
        # The tag needs no sending: the caller starts every custom id with it.
        custom_ids_check(requests)
        batch_requests = [
            {"custom_id": custom_id, "params": self._chat.render(request)}
            for custom_id, request in requests
        ]
        with self._faults(requests[0][1].model):
            batch = self._client.messages.batches.create(requests=batch_requests)
        return batch.id

    def find(
        self,
        tag: str,
        *,
        since: datetime,
        until: datetime | None = None,
        input_file_id: str = "",
    ) -> Adoption:
        """The batch made between `since` and `until` whose requests' custom ids start with
        `tag`. A batch carries no metadata and its requests can be read only once it has
        ended: while one made in that span is still running, it may be this one (undecided).
        One made after `until` cannot be, so it never holds the search up."""
        if not tag:
            return Adoption()
        undecided = False
        with self._faults(self._chat.model_name):
            for batch in self._client.messages.batches.list(limit=100):  # newest first
                if batch.created_at < since:
                    break
                if until is not None and batch.created_at > until:
                    continue
                if batch.processing_status != "ended":
                    undecided = True
                    continue
                if self._first_custom_id(batch.id).startswith(f"{tag}-"):
                    return Adoption(batch.id)
        return Adoption(undecided=undecided)

    def _first_custom_id(self, batch_id: str) -> str:
        """The custom id of an ended batch's first result (every id of a batch made here
        starts with its tag), reading no further."""
        with closing(self._client.messages.batches.results(batch_id)) as results:
            first = next(iter(results), None)
        return first.custom_id if first is not None else ""

    def status(self, batch_id: str) -> BatchStatus:
        with self._faults(self._chat.model_name):
            batch = self._client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        outcomes = {
            "succeeded": counts.succeeded,
            "errored": counts.errored,
            "expired": counts.expired,
            "cancelled": counts.canceled,
            "processing": counts.processing,
        }
        state = ENDED if batch.processing_status == "ended" else IN_PROGRESS
        return BatchStatus(state, counted(outcomes), batch.processing_status)

    def results(self, batch_id: str, requests: Mapping[str, ChatRequest]) -> Iterator[BatchResult]:
        with self._faults(self._chat.model_name):
            entries = list(self._client.messages.batches.results(batch_id))
        for entry in entries:
            if entry.custom_id not in requests:
                continue  # not one of the requests the caller is waiting for
            result = entry.result
            if result.type == "succeeded":
                yield self._succeeded(entry.custom_id, result.message)
                continue
            error = getattr(getattr(result, "error", None), "error", None)
            message = getattr(error, "message", "") or result.type
            kind = getattr(error, "type", "")
            yield BatchResult(
                entry.custom_id,
                error_kind=ERROR_KIND_OF.get(result.type, ERRORED),
                error=f"{kind}: {message}" if kind else message,
            )

    def _succeeded(self, custom_id: str, message) -> BatchResult:
        try:
            with self._faults(self._model_string):
                response = parse_message(message, model=self._model_string, latency_ms=0)
        except ProviderError as fault:  # one unreadable answer: sent again, not the batch
            return BatchResult(custom_id, error_kind=ERRORED, error=str(fault))
        return BatchResult(custom_id, response=response)

    def _faults(self, model: str):
        return provider_faults(anthropic, model=model, secrets=(self._client.api_key,))
