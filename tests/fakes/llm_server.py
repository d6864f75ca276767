"""A local fake of the OpenAI and Anthropic chat endpoints, for tests and benchmarks.

It speaks the wire formats of POST /v1/chat/completions (OpenAI), POST
/compatible/v1/chat/completions (an OpenAI-compatible server such as vLLM) and POST
/v1/messages (Anthropic), so the real SDKs run unmodified against it. Every request body is
checked against the SDK's own request types first (tests/fakes/request_types.py) and refused
with a 400 naming each problem, as the real APIs refuse unknown or ill-typed fields; so is a
tool-calling turn sent back without the reasoning it came with. Each test scripts
a queue of replies, written once and rendered in whichever format the request arrived in;
when the queue is empty every request gets a plain text answer, optionally after a fixed
delay (a stand-in for model latency in benchmarks), or whatever a responder function makes of
the request. Every request body is recorded unless recording is turned off.

Prompt caching is reported the way each SDK reads it (OpenAI chat completions'
usage.prompt_tokens_details.cached_tokens, the Responses API's
usage.input_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens and
cache_creation_input_tokens): as scripted on a reply, or, with `prompt_cache=True`, as a
provider would have cached the requests this server has seen (tests/fakes/prompt_cache.py; the
input tokens are then counted from the request, 4 characters a token). An OpenAI-compatible
server reports no cache details unless a reply scripts a read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.batch_api import FakeBatchApi
from tests.fakes.prompt_cache import PromptCache
from tests.fakes.request_types import request_problems

OPENAI_PATH = "/v1/chat/completions"
COMPATIBLE_PATH = "/compatible/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
ANTHROPIC_PATH = "/v1/messages"
DIALECT_OF_PATH = {
    OPENAI_PATH: "openai",
    COMPATIBLE_PATH: "openai-compatible",
    ANTHROPIC_PATH: "anthropic",
    RESPONSES_PATH: "openai-responses",
}


@dataclass(frozen=True)
class FakeToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text; may be deliberately malformed (OpenAI format only)


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer: either a model turn (status 200) or an HTTP error."""

    status: int = 200
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()
    reasoning: str = ""  # OpenAI: reasoning_content field; Anthropic: a thinking block
    # Anthropic only: a redacted_thinking block (its opaque data) after any thinking block.
    redacted_reasoning: str = ""
    truncated: bool = False
    # The model declines: OpenAI sends this text in `refusal` with content null; Anthropic
    # stops with stop_reason "refusal" after it (no text block when it is empty).
    refusal: str | None = None
    error_message: str = ""
    error_code: str = ""  # OpenAI error code, e.g. context_length_exceeded
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    # The whole prompt, cached and written tokens included (Anthropic's payload reports the
    # rest apart, as its API does).
    input_tokens: int = 11
    output_tokens: int = 7
    # Of input_tokens: read from the provider's prompt cache, and written to it (Anthropic).
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    # Sent verbatim instead of a well-formed payload: a broken proxy, a truncated body.
    raw_body: str | None = None
    # OpenAI's chat completions: the backend that answered (system_fingerprint).
    fingerprint: str = "fp_fake0001"


def answer(
    text: str = "",
    *,
    tool_calls: tuple[FakeToolCall, ...] = (),
    reasoning: str = "",
    redacted_reasoning: str = "",
    truncated: bool = False,
    delay_seconds: float = 0.0,
    fingerprint: str = "fp_fake0001",
) -> FakeReply:
    return FakeReply(
        text=text,
        tool_calls=tool_calls,
        reasoning=reasoning,
        redacted_reasoning=redacted_reasoning,
        truncated=truncated,
        delay_seconds=delay_seconds,
        fingerprint=fingerprint,
    )


def refused(text: str = "") -> FakeReply:
    """A model turn that refuses, saying `text` (Anthropic: nothing at all when empty)."""
    return FakeReply(refusal=text)


def rate_limited(*, retry_after: str | None = None, retry_after_ms: str | None = None) -> FakeReply:
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    return FakeReply(status=429, error_message="Rate limit reached", headers=headers)


def server_error(status: int = 500) -> FakeReply:
    return FakeReply(status=status, error_message="The server had an error")


def bad_request(message: str = "Invalid value for 'messages'") -> FakeReply:
    return FakeReply(status=400, error_message=message)


def malformed(body: str) -> FakeReply:
    """A 200 whose body is not what the wire format promises (e.g. '{}', 'null', '<html>')."""
    return FakeReply(raw_body=body)


def context_overflow() -> FakeReply:
    """A prompt longer than the model's window, worded the way each provider words it."""
    return FakeReply(
        status=400,
        error_message="prompt is too long: 210000 tokens > 200000 maximum",
        error_code="context_length_exceeded",
    )


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeLLMServer:
    """Threaded HTTP server on 127.0.0.1 with an OS-chosen port."""

    def __init__(
        self,
        *,
        delay_seconds: float = 0.0,
        default_text: str = "Okay.",
        responder: Callable[[RecordedRequest], FakeReply] | None = None,
        record: bool = True,
        check_requests: bool = True,
        prompt_cache: bool = False,
    ):
        self.default_reply = answer(default_text, delay_seconds=delay_seconds)
        # With no scripted reply left, the responder (if any) composes the answer from the
        # request: benchmarks play whole conversations and juries through it.
        self.responder = responder
        # A long benchmark sends hundreds of thousands of requests: it keeps none of them.
        self.record = record
        # Off only for a test that sends a deliberately invalid body past the type check.
        self.check_requests = check_requests
        # On: usage counted from each request, with what a provider's prompt cache would have
        # read or written given the requests before it; off: the usage each reply scripts.
        self._prompt_cache = PromptCache() if prompt_cache else None
        self._replies: deque[FakeReply] = deque()
        # The reasoning each tool-calling turn was answered with, by its first call's id: a
        # later request must send that turn back with it unchanged (the thinking-block rule).
        self._reasoning_of_turn: dict[str, Any] = {}
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        # Set on stop so handlers still sleeping in a slow reply finish at once.
        self._stopping = threading.Event()
        # OpenAI's Batch API and Anthropic's Message Batches (tests/fakes/batch_api.py).
        self.batches = FakeBatchApi(self)
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def compatible_base_url(self) -> str:
        """Where an `openai-compatible/` model reaches the fake: OpenAI's format with vLLM's
        extra fields allowed."""
        return f"{self.url}/compatible/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def script(self, *replies: FakeReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def remember_reasoning(self, reply: FakeReply, payload_reasoning: Any) -> None:
        if reply.tool_calls and payload_reasoning:
            with self._lock:
                self._reasoning_of_turn[reply.tool_calls[0].id] = payload_reasoning

    def type_refusal(self, path: str, body: dict[str, Any]) -> FakeReply | None:
        """A 400 naming what the provider's request types do not allow; None for a valid body."""
        dialect = DIALECT_OF_PATH.get(path)
        if not self.check_requests or dialect is None:
            return None
        problems = request_problems(body, dialect)
        return bad_request(f"Invalid request: {'; '.join(problems)}") if problems else None

    def reasoning_refusal(self, path: str, body: dict[str, Any]) -> FakeReply | None:
        """A 400 for a request that sends a tool-calling turn back without the reasoning it
        came with, as the real APIs refuse it; None when the request keeps the rule."""
        with self._lock:
            issued = dict(self._reasoning_of_turn)
        if path == RESPONSES_PATH:
            return _responses_reasoning_refusal(body, issued)
        for index, message in enumerate(body.get("messages", ())):
            if message.get("role") != "assistant":
                continue
            first_call = _first_call_id(path, message)
            if first_call in issued and _reasoning_sent(path, message) != issued[first_call]:
                return bad_request(
                    f"messages.{index}: an assistant turn that called a tool must be sent back "
                    "with the reasoning it came with, unchanged"
                )
        return None

    def with_prompt_cache(self, path: str, body: dict[str, Any], reply: FakeReply) -> FakeReply:
        """`reply` with the usage the simulated prompt cache gives the request (when on)."""
        dialect = DIALECT_OF_PATH.get(path)
        if self._prompt_cache is None or reply.status != 200 or dialect is None:
            return reply
        usage = self._prompt_cache.usage(dialect, body)
        return replace(
            reply,
            input_tokens=max(1, usage.input_tokens),
            cached_tokens=usage.cached_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )

    def answer(
        self, path: str, headers: dict[str, str], body: dict[str, Any], *, wait: bool = True
    ) -> tuple[FakeReply, dict[str, Any]]:
        """The reply to one chat request and its payload in the request's format: what a
        live call gets, and what a batch's line gets (`wait` False: a batch has no latency)."""
        recorded = RecordedRequest(path, headers, body)
        reply = (
            self.type_refusal(path, body)
            or self.reasoning_refusal(path, body)
            or self.with_prompt_cache(path, body, self._next_reply(recorded))
        )
        if wait:
            self._wait(reply.delay_seconds)
        if path in (OPENAI_PATH, COMPATIBLE_PATH):
            payload = _openai_payload(reply, body, compatible=path == COMPATIBLE_PATH)
            self.remember_reasoning(reply, _openai_reasoning(payload))
        elif path == ANTHROPIC_PATH:
            payload = _anthropic_payload(reply, body)
            self.remember_reasoning(reply, _anthropic_reasoning(payload))
        elif path == RESPONSES_PATH:
            payload = _responses_payload(reply, body)
            self.remember_reasoning(reply, _responses_reasoning(payload))
        else:
            reply, payload = FakeReply(status=404), {"error": {"message": "no such path"}}
        return reply, payload

    def _next_reply(self, request: RecordedRequest) -> FakeReply:
        with self._lock:
            if self.record:
                self._requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return self.responder(request) if self.responder else self.default_reply

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    # Worker threads connect many at once (a lab study at concurrency 8 judges 8 criteria of 8
    # pairs together): the default listen backlog of 5 refused some of their connections.
    request_queue_size = 256
    daemon_threads = True


@contextmanager
def running_fake_llm_server(**options: Any) -> Iterator[FakeLLMServer]:
    server = FakeLLMServer(**options).start()
    try:
        yield server
    finally:
        server.stop()


def _handler_for(fake: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if fake.batches.handles(self.path):
                self._send(*fake.batches.post(self.path, dict(self.headers.items()), raw))
                return
            body = json.loads(raw or b"{}")
            self._send(*fake.answer(self.path, dict(self.headers.items()), body))

        def do_GET(self) -> None:
            self._send(*fake.batches.get(self.path, f"http://{self.headers.get('host')}"))

        def _send(self, reply: FakeReply, payload: dict[str, Any] | str) -> None:
            text = payload if isinstance(payload, str) else json.dumps(payload)
            data = (reply.raw_body if reply.raw_body is not None else text).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            # The client may have given up waiting (a timeout test): nothing left to answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

    return Handler


def _openai_payload(
    reply: FakeReply, request: dict[str, Any], *, compatible: bool = False
) -> dict[str, Any]:
    if reply.status != 200:
        return {
            "error": {
                "message": reply.error_message,
                "type": "invalid_request_error",
                "code": reply.error_code or None,
            }
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.refusal is not None:
        message.update(content=None, refusal=reply.refusal)
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    finish = "length" if reply.truncated else "tool_calls" if reply.tool_calls else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", ""),
        "system_fingerprint": reply.fingerprint,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _openai_usage(reply, compatible=compatible),
    }


def _openai_usage(reply: FakeReply, *, compatible: bool) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    # vLLM and most compatible servers send no details unless they cache (and say so).
    if not compatible or reply.cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens, "audio_tokens": 0}
    return usage


def _anthropic_payload(reply: FakeReply, request: dict[str, Any]) -> dict[str, Any]:
    if reply.status != 200:
        error_type = "rate_limit_error" if reply.status == 429 else "invalid_request_error"
        return {"type": "error", "error": {"type": error_type, "message": reply.error_message}}
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        signature = thinking_signature(reply.reasoning)
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    if reply.redacted_reasoning:
        content.append({"type": "redacted_thinking", "data": reply.redacted_reasoning})
    text = reply.text if reply.refusal is None else reply.refusal
    if text:
        content.append({"type": "text", "text": text})
    for call in reply.tool_calls:
        arguments = json.loads(call.arguments)  # Anthropic always sends parsed objects
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    stop = "max_tokens" if reply.truncated else "tool_use" if reply.tool_calls else "end_turn"
    if reply.refusal is not None:
        stop = "refusal"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", ""),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            # Anthropic's input_tokens leave out what was read from or written to the cache.
            "input_tokens": reply.input_tokens - reply.cached_tokens - reply.cache_write_tokens,
            "output_tokens": reply.output_tokens,
            "cache_read_input_tokens": reply.cached_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
        },
    }


def thinking_signature(thinking: str) -> str:
    """Stands in for Anthropic's signature over a thinking block: changes with its text."""
    return hashlib.sha256(f"fake-signing-key:{thinking}".encode()).hexdigest()[:32]


def _first_call_id(path: str, message: dict[str, Any]) -> str | None:
    if path != ANTHROPIC_PATH:
        calls = message.get("tool_calls") or ()
        return calls[0]["id"] if calls else None
    content = message.get("content")
    blocks = content if isinstance(content, list) else ()
    return next((block["id"] for block in blocks if block.get("type") == "tool_use"), None)


def _reasoning_sent(path: str, message: dict[str, Any]) -> Any:
    if path != ANTHROPIC_PATH:
        return _openai_reasoning({"choices": [{"message": message}]})
    return _anthropic_reasoning(message)


def _openai_reasoning(payload: dict[str, Any]) -> Any:
    message = payload.get("choices", [{}])[0].get("message", {})
    return {name: message[name] for name in ("reasoning_content", "reasoning") if name in message}


def _anthropic_reasoning(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The thinking blocks a turn starts with (the API reads them only at the start)."""
    content = payload.get("content")
    leading = []
    for block in content if isinstance(content, list) else ():
        if block.get("type") not in {"thinking", "redacted_thinking"}:
            break
        leading.append(block)
    return leading


def _responses_payload(reply: FakeReply, request: dict[str, Any]) -> dict[str, Any]:
    """A reply in the Responses API's format: output items (reasoning, message, function calls)."""
    if reply.status != 200:
        return _openai_payload(reply, request)
    output: list[dict[str, Any]] = []
    if reply.reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{thinking_signature(reply.reasoning)[:12]}",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": f"enc:{thinking_signature(reply.reasoning)}",
            }
        )
    parts = [{"type": "output_text", "text": reply.text, "annotations": []}] if reply.text else []
    if reply.refusal is not None:
        parts = [{"type": "refusal", "refusal": reply.refusal}]
    if parts:
        output.append(
            {"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
             "content": parts}
        )  # fmt: skip
    output.extend(
        {"type": "function_call", "id": f"fc_{c.id}", "call_id": c.id, "name": c.name,
         "arguments": c.arguments, "status": "completed"}
        for c in reply.tool_calls
    )  # fmt: skip
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "model": request.get("model", ""),
        "status": "incomplete" if reply.truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if reply.truncated else None,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": request.get("tools", []),
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses_reasoning(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in payload.get("output", ()) if item.get("type") == "reasoning"]


def _responses_reasoning_refusal(body: dict[str, Any], issued: dict[str, Any]) -> FakeReply | None:
    """The Responses API's form of the rule: a function call sent back in the input comes
    after the reasoning items it was answered with, unchanged."""
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if item.get("type") != "function_call" or item.get("call_id") not in issued:
            continue
        wanted = [_sent_back(reasoning) for reasoning in issued[item["call_id"]]]
        if not all(reasoning in items[:index] for reasoning in wanted):
            return bad_request(
                f"input.{index}: a function call must come after the reasoning item it was "
                "answered with, unchanged"
            )
    return None


def _sent_back(reasoning: dict[str, Any]) -> dict[str, Any]:
    """A reasoning output item as a request's input carries it back."""
    return {key: reasoning[key] for key in ("type", "id", "summary", "encrypted_content")}
