"""The fake model server's batch APIs: OpenAI's Batch API (POST /v1/files, POST /v1/batches,
GET /v1/batches (the list, newest first), GET /v1/batches/{id}, GET /v1/files/{id}/content)
and Anthropic's Message Batches (POST /v1/messages/batches, GET /v1/messages/batches (the
list, newest first), GET /v1/messages/batches/{id} and its results_url), in the shapes the
SDKs read.

Every body is checked against the SDK's own request types (tests/fakes/request_types.py): the
batch's (`BatchCreateParams` of each SDK) when it is made, and each request inside it against
the live call's types as the live endpoint checks it; a request the live endpoint would refuse
comes back as an errored result, as the real APIs do. Each request is answered, when the batch
is made, by the server's own live-call answer (its script, responder or default reply).

Controls, set on `server.batches` by a test: `polls_in_progress` (a batch reports itself in
progress at its first N looks), `expire_next` (so many of the next batches expire, with only
`expired_answered` of their requests answered), `errored_custom_ids` (requests answered with a
server error), `errored_units` (the same, for custom ids ending in "-<unit>", as the site's
are), `on_created` (called once a batch is made, before the reply goes out),
`on_results_read` (called as a batch's results are read), `unanswered_creates` (so many of
the next batches are made, but their create is answered with a 504, as when a gateway times
out on a provider that went on to make the batch). `created` lists
every batch made; each counts its status requests (`looks`).
"""

from __future__ import annotations

import email.parser
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tests.fakes.request_types import request_problems

if TYPE_CHECKING:
    from tests.fakes.llm_server import FakeLLMServer, FakeReply

OPENAI_FILES = "/v1/files"
OPENAI_BATCHES = "/v1/batches"
ANTHROPIC_BATCHES = "/v1/messages/batches"
OPENAI_BATCH_URLS = ("/v1/chat/completions", "/v1/responses")
ANTHROPIC_MESSAGES = "/v1/messages"
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


@dataclass
class FakeBatch:
    id: str
    provider: str  # "openai" or "anthropic"
    endpoint: str
    # custom id -> (HTTP status, payload) of each request's answer; None: never run (expired).
    outcomes: dict[str, tuple[int, dict[str, Any]] | None]
    expires: bool = False
    looks: int = 0
    input_file_id: str = ""
    metadata: dict[str, str] | None = None
    created_at: int = field(default_factory=lambda: int(datetime.now(UTC).timestamp()))


class FakeBatchApi:
    def __init__(self, server: FakeLLMServer):
        self._server = server
        self.polls_in_progress = 0
        self.expire_next = 0
        self.expired_answered = 0
        self.errored_custom_ids: set[str] = set()
        self.errored_units: set[str] = set()
        # Called as a batch's results are read (a worker-kill test kills the worker there).
        self.on_results_read: Callable[[], None] | None = None
        # Called once a batch is made, before its reply (a worker-kill test kills it there).
        self.on_created: Callable[[], None] | None = None
        self.unanswered_creates = 0
        self.created: list[FakeBatch] = []
        self._batches: dict[str, FakeBatch] = {}
        self._files: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def handles(self, path: str) -> bool:
        return path in (OPENAI_FILES, OPENAI_BATCHES, ANTHROPIC_BATCHES)

    # --- requests ------------------------------------------------------------------------

    def post(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[FakeReply, Any]:
        if path == OPENAI_FILES:
            return self._file_upload(headers, raw)
        body = json.loads(raw or b"{}")
        dialect = "openai-batch" if path == OPENAI_BATCHES else "anthropic-batch"
        problems = request_problems(body, dialect) if self._server.check_requests else []
        if problems:
            return _refused(f"Invalid request: {'; '.join(problems)}")
        provider = "openai" if path == OPENAI_BATCHES else "anthropic"
        made = self._openai_create(body) if provider == "openai" else self._anthropic_create(body)
        with self._lock:
            unanswered = made[0].status == 200 and self.unanswered_creates > 0
            self.unanswered_creates -= unanswered
        if unanswered:
            return _gateway_timeout(provider)
        return made

    def get(self, path: str, host: str) -> tuple[FakeReply, Any]:
        parts = path.partition("?")[0].strip("/").split("/")
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            with self._lock:
                text = self._files.get(parts[2])
            if text is not None and parts[2].endswith(("_output", "_errors")):
                self._results_read()
            return (_ok(), text) if text is not None else _missing()
        if parts == ["v1", "batches"]:
            return _ok(), self._listed("openai", self._openai_batch)
        if parts == ["v1", "messages", "batches"]:
            return _ok(), self._listed("anthropic", lambda b: self._anthropic_batch(b, host))
        if parts[:2] == ["v1", "batches"] and len(parts) == 3:
            batch = self._look(parts[2], "openai")
            return (_ok(), self._openai_batch(batch)) if batch else _missing()
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
            batch = self._look(parts[3], "anthropic")
            return (_ok(), self._anthropic_batch(batch, host)) if batch else _missing()
        if parts[:3] == ["v1", "messages", "batches"] and parts[4:] == ["results"]:
            batch = self._batches.get(parts[3])
            if batch is None or self._in_progress(batch):
                return _missing()
            self._results_read()
            return _ok(), self._anthropic_results(batch)
        return _missing()

    # --- OpenAI ----------------------------------------------------------------------------

    def _file_upload(self, headers: dict[str, str], raw: bytes) -> tuple[FakeReply, Any]:
        fields = _multipart(headers.get("Content-Type") or headers.get("content-type", ""), raw)
        if fields.get("purpose") != "batch" or "file" not in fields:
            return _refused("a batch input file needs purpose 'batch' and a file")
        file_id = self._new_id("file")
        with self._lock:
            self._files[file_id] = fields["file"]
        return _ok(), {
            "id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": 0,
            "filename": "batch.jsonl", "purpose": "batch", "status": "processed",
        }  # fmt: skip

    def _openai_create(self, body: dict[str, Any]) -> tuple[FakeReply, Any]:
        with self._lock:
            text = self._files.get(body["input_file_id"])
        if text is None:
            return _refused(f"no file {body['input_file_id']!r}")
        try:
            lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            return _refused("the input file is not JSONL")
        problems = _line_problems(lines, body["endpoint"])
        if problems:
            return _refused(f"Invalid input file: {problems}")
        requests = {line["custom_id"]: (line["url"], line["body"]) for line in lines}
        batch = self._made("openai", body["endpoint"], requests, "batch")
        batch.input_file_id, batch.metadata = body["input_file_id"], body.get("metadata")
        return _ok(), self._openai_batch(batch)

    def _openai_batch(self, batch: FakeBatch) -> dict[str, Any]:
        answered = [o for o in batch.outcomes.values() if o is not None]
        done = sum(status == 200 for status, _ in answered)
        running = self._in_progress(batch)
        status = "in_progress" if running else "expired" if batch.expires else "completed"
        files = {} if running else self._openai_files(batch)
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id, "completion_window": "24h",
            "status": status, "created_at": batch.created_at, "metadata": batch.metadata,
            "request_counts": {
                "total": len(batch.outcomes),
                "completed": 0 if running else done,
                "failed": 0 if running else len(answered) - done,
            },
            **files,
        }  # fmt: skip

    def _openai_files(self, batch: FakeBatch) -> dict[str, str | None]:
        output, errors = [], []
        for custom_id, outcome in batch.outcomes.items():
            line: dict[str, Any] = {"id": f"batch_req_{custom_id}", "custom_id": custom_id}
            if outcome is None:
                expired = {"code": "batch_expired", "message": EXPIRED_MESSAGE}
                errors.append({**line, "response": None, "error": expired})
                continue
            status, payload = outcome
            line.update(response={"status_code": status, "request_id": "req_fake", "body": payload})
            (output if status == 200 else errors).append({**line, "error": None})
        return {
            "output_file_id": self._stored(f"{batch.id}_output", output),
            "error_file_id": self._stored(f"{batch.id}_errors", errors),
        }

    def _stored(self, file_id: str, lines: list[dict[str, Any]]) -> str | None:
        if not lines:
            return None
        with self._lock:
            self._files[file_id] = "".join(json.dumps(line) + "\n" for line in lines)
        return file_id

    # --- Anthropic --------------------------------------------------------------------------

    def _anthropic_create(self, body: dict[str, Any]) -> tuple[FakeReply, Any]:
        ids = [request["custom_id"] for request in body["requests"]]
        if not ids or len(set(ids)) != len(ids):
            return _refused("a batch holds one or more requests, each custom_id once")
        requests = {r["custom_id"]: (ANTHROPIC_MESSAGES, r["params"]) for r in body["requests"]}
        batch = self._made("anthropic", ANTHROPIC_MESSAGES, requests, "msgbatch")
        return _ok(), self._anthropic_batch(batch, "")

    def _anthropic_batch(self, batch: FakeBatch, host: str) -> dict[str, Any]:
        running = self._in_progress(batch)
        answered = [o for o in batch.outcomes.values() if o is not None]
        done = sum(status == 200 for status, _ in answered)
        created = datetime.fromtimestamp(batch.created_at, UTC).isoformat()
        return {
            "id": batch.id, "type": "message_batch", "created_at": created,
            "expires_at": created, "archived_at": None, "cancel_initiated_at": None,
            "ended_at": None if running else created,
            "processing_status": "in_progress" if running else "ended",
            "request_counts": {
                "processing": len(batch.outcomes) if running else 0,
                "succeeded": 0 if running else done,
                "errored": 0 if running else len(answered) - done,
                "canceled": 0,
                "expired": 0 if running else len(batch.outcomes) - len(answered),
            },
            "results_url": None if running else f"{host}{ANTHROPIC_BATCHES}/{batch.id}/results",
        }  # fmt: skip

    def _anthropic_results(self, batch: FakeBatch) -> str:
        lines = []
        for custom_id, outcome in batch.outcomes.items():
            if outcome is None:
                result: dict[str, Any] = {"type": "expired"}
            elif outcome[0] == 200:
                result = {"type": "succeeded", "message": outcome[1]}
            else:
                error = outcome[1].get("error") or {}
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": error.get("type") or "api_error",
                    "message": error.get("message", "")}}}  # fmt: skip
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        return "".join(line + "\n" for line in lines)

    # --- both ---------------------------------------------------------------------------------

    def _made(
        self, provider: str, endpoint: str, requests: dict[str, tuple[str, dict]], prefix: str
    ) -> FakeBatch:
        with self._lock:
            expires = self.expire_next > 0
            self.expire_next -= expires
        outcomes: dict[str, tuple[int, dict[str, Any]] | None] = {}
        for index, (custom_id, (url, body)) in enumerate(requests.items()):
            if expires and index >= self.expired_answered:
                outcomes[custom_id] = None
            elif self._errored(custom_id):
                outcomes[custom_id] = (500, _server_error(provider))
            else:
                reply, payload = self._server.answer(url, {}, body, wait=False)
                outcomes[custom_id] = (reply.status, payload)
        batch = FakeBatch(self._new_id(prefix), provider, endpoint, outcomes, expires)
        with self._lock:
            self._batches[batch.id] = batch
            self.created.append(batch)
        if self.on_created is not None:
            self.on_created()
        return batch

    def _errored(self, custom_id: str) -> bool:
        unit = custom_id.rsplit("-", 1)[-1]
        return custom_id in self.errored_custom_ids or unit in self.errored_units

    def _listed(self, provider: str, shown: Callable[[FakeBatch], dict]) -> dict[str, Any]:
        """Every batch of the provider, newest first, on one page (the SDKs' list shape).
        Listing is no look (it moves no batch on): each shows what its next look would."""
        with self._lock:
            made = [batch for batch in reversed(self.created) if batch.provider == provider]
        data = [shown(replace(batch, looks=batch.looks + 1)) for batch in made]
        if provider == "openai":
            return {"object": "list", "data": data, "has_more": False,
                    "first_id": made[0].id if made else None,
                    "last_id": made[-1].id if made else None}  # fmt: skip
        return {"data": data, "has_more": False,
                "first_id": made[0].id if made else None,
                "last_id": made[-1].id if made else None}  # fmt: skip

    def _look(self, batch_id: str, provider: str) -> FakeBatch | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch.provider != provider:
                return None
            batch.looks += 1
            return batch

    def _results_read(self) -> None:
        if self.on_results_read is not None:
            self.on_results_read()

    def _in_progress(self, batch: FakeBatch) -> bool:
        return batch.looks <= self.polls_in_progress

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self._ids):06d}"


def _line_problems(lines: list[dict[str, Any]], endpoint: str) -> str:
    """What OpenAI's validation of an input file refuses (the bodies are checked per request)."""
    if not lines:
        return "no requests"
    ids = [line.get("custom_id") for line in lines]
    if len(set(ids)) != len(ids) or not all(isinstance(i, str) and i for i in ids):
        return "each line needs a custom_id of its own"
    for number, line in enumerate(lines, 1):
        if set(line) != {"custom_id", "method", "url", "body"}:
            return f"line {number}: fields are custom_id, method, url and body"
        if line["method"] != "POST" or line["url"] != endpoint:
            return f"line {number}: POST to the batch's endpoint {endpoint}"
        if line["url"] not in OPENAI_BATCH_URLS or not isinstance(line["body"], dict):
            return f"line {number}: a chat completions or responses body"
    return ""


def _multipart(content_type: str, raw: bytes) -> dict[str, str]:
    """The fields of a multipart/form-data body, by name."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser().parsebytes(head + raw)
    fields = {}
    for part in message.get_payload() if message.is_multipart() else ():
        name = part.get_param("name", header="content-disposition")
        fields[name] = part.get_payload(decode=True).decode("utf-8")
    return fields


def _server_error(provider: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": "api_error", "message": "Internal error"}}
    return {"error": {"message": "The server had an error", "type": "server_error", "code": None}}


def _gateway_timeout(provider: str) -> tuple[FakeReply, Any]:
    from tests.fakes.llm_server import server_error

    return server_error(504), _server_error(provider)


def _ok() -> FakeReply:
    from tests.fakes.llm_server import FakeReply

    return FakeReply()


def _refused(message: str) -> tuple[FakeReply, Any]:
    from tests.fakes.llm_server import bad_request

    reply = bad_request(message)
    return reply, {"error": {"message": message, "type": "invalid_request_error"}}


def _missing() -> tuple[FakeReply, Any]:
    from tests.fakes.llm_server import FakeReply

    return FakeReply(status=404), {"error": {"message": "no such batch or file"}}
