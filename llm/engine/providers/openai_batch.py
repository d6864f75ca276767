"""OpenAI's Batch API: the requests go up as a JSONL file (one /v1/chat/completions or
/v1/responses body per line, each with its custom id), a batch is made of the file, and once
it ends its output file holds the answers and its error file the requests that got none.

The bodies are the live adapters' own (`render`), so a batch asks exactly what a live call
would ask, and the answers are parsed by the live adapters' parsers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import openai
from openai.types.responses import Response

from llm.engine.chat import ChatRequest, ChatResponse, ProviderError
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
from llm.engine.providers.errors import classify_status, provider_faults
from llm.engine.providers.openai_chat import OpenAIEndpoint, parse_completion
from llm.engine.providers.openai_responses import parse_response

WINDOW = "24h"  # the only completion window the Batch API offers
# The Batch API's states that still move, and what an ended one's unanswered requests lack.
MOVING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
# A batch that failed as a whole (its input file refused) ran nothing: no results at all.
UNANSWERED_BY_STATE = {"expired": EXPIRED, "cancelled": CANCELLED, "failed": ERRORED}
# The error code OpenAI gives each request an expired batch never ran.
EXPIRED_CODE = "batch_expired"
# The metadata key a batch's tag travels under (batches.Adoption).
TAG_KEY = "carejury_batch"


class OpenAIBatchProvider:
    """Batches for one model through `endpoint` (an OpenAIChatProvider or an
    OpenAIResponsesProvider: its path, request body and reply parser)."""

    reads_requests = False  # the output file names its custom ids; the requests are not read

    def __init__(self, endpoint: OpenAIEndpoint, model_string: str):
        self._endpoint = endpoint
        self._model_string = model_string
        self._client: openai.OpenAI = endpoint._client
        self._url = f"/v1{endpoint.path}"

    def submit(
        self,
        requests: Sequence[tuple[str, ChatRequest]],
        *,
        tag: str = "",
        uploaded: Uploaded | None = None,
    ) -> str:
        custom_ids_check(requests)
        lines = [
            json.dumps(
                {
                    "custom_id": custom_id,
                    "method": "POST",
                    "url": self._url,
                    "body": self._endpoint.render(request),
                },
                ensure_ascii=False,
            )
            for custom_id, request in requests
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        with self._faults(requests[0][1].model):
            upload = self._client.files.create(file=("batch.jsonl", data), purpose="batch")
            if uploaded is not None:
                uploaded(upload.id)
            batch = self._client.batches.create(
                input_file_id=upload.id,
                endpoint=self._url,
                completion_window=WINDOW,
                **({"metadata": {TAG_KEY: tag}} if tag else {}),
            )
        return batch.id

    def find(
        self,
        tag: str,
        *,
        since: datetime,
        until: datetime | None = None,
        input_file_id: str = "",
    ) -> Adoption:
        """The batch made of `input_file_id` with `tag` in its metadata, if any. Without a
        file id nothing was made: the batch is made after its file id is stored. `until` is
        not needed: the file and the tag name the batch whenever the provider made it."""
        if not input_file_id or not tag:
            return Adoption()
        oldest = since.timestamp()
        with self._faults(self._endpoint.model_name):
            for batch in self._client.batches.list(limit=100):  # newest first, every page
                if batch.created_at < oldest:
                    break
                mine = (batch.metadata or {}).get(TAG_KEY) == tag
                if mine and batch.input_file_id == input_file_id:
                    return Adoption(batch.id)
        return Adoption()

    def status(self, batch_id: str) -> BatchStatus:
        with self._faults(self._endpoint.model_name):
            batch = self._client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total, done, failed = (
            (counts.total, counts.completed, counts.failed) if counts else (0,) * 3
        )
        state = IN_PROGRESS if batch.status in MOVING else ENDED
        outcomes = {"succeeded": done, "errored": failed}
        if state == IN_PROGRESS:
            outcomes["processing"] = max(total - done - failed, 0)
        elif batch.status in UNANSWERED_BY_STATE:
            outcomes[UNANSWERED_BY_STATE[batch.status]] = max(total - done - failed, 0)
        return BatchStatus(state, counted(outcomes), batch.status)

    def results(self, batch_id: str, requests: Mapping[str, ChatRequest]) -> Iterator[BatchResult]:
        with self._faults(self._endpoint.model_name):
            batch = self._client.batches.retrieve(batch_id)
            unanswered = UNANSWERED_BY_STATE.get(batch.status, ERRORED)
            lines = [
                line
                for file_id in (batch.output_file_id, batch.error_file_id)
                if file_id
                for line in self._client.files.content(file_id).text.splitlines()
                if line.strip()
            ]
        for line in lines:
            result = self._result(json.loads(line), requests, unanswered)
            if result is not None:
                yield result

    def _result(
        self, line: dict[str, Any], requests: Mapping[str, ChatRequest], unanswered: str
    ) -> BatchResult | None:
        custom_id = line.get("custom_id", "")
        if custom_id not in requests:
            return None  # not one of the requests the caller is waiting for
        reply, error = line.get("response"), line.get("error")
        if reply and reply.get("status_code") == 200:
            try:
                with self._faults(self._model_string):
                    return BatchResult(custom_id, response=self._parsed(reply["body"]))
            except ProviderError as fault:  # one unreadable answer: sent again, not the batch
                return BatchResult(custom_id, error_kind=ERRORED, error=str(fault))
        if error:
            kind = EXPIRED if error.get("code") == EXPIRED_CODE else unanswered
            return BatchResult(custom_id, error_kind=kind, error=error.get("message") or kind)
        status = (reply or {}).get("status_code") or 0
        detail = ((reply or {}).get("body") or {}).get("error") or {}
        message = detail.get("message") or "no answer"
        fault = classify_status(status, message, detail.get("code"))
        return BatchResult(
            custom_id, error_kind=ERRORED, error=f"HTTP {status} ({fault}): {message}"
        )

    def _parsed(self, body: dict[str, Any]) -> ChatResponse:
        # Built as the SDK builds a live reply (`construct`: no validation), so a batch answer
        # is read exactly as the same answer would be read live.
        reply = self._endpoint.reply_type.construct(**body)
        if self._endpoint.reply_type is Response:
            return parse_response(reply, model=self._model_string, latency_ms=0)
        return parse_completion(reply, model=self._model_string, latency_ms=0)

    def _faults(self, model: str):
        return provider_faults(openai, model=model, secrets=(self._client.api_key,))
