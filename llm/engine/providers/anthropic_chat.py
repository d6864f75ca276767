"""Anthropic messages API with tools: tool_use / tool_result blocks, thinking as reasoning."""

from __future__ import annotations

import inspect
import json
import time
from typing import Any

import anthropic

from llm.engine.chat import (
    REFUSED_WITHOUT_TEXT,
    ChatRequest,
    ChatResponse,
    Message,
    ToolCall,
    Usage,
)
from llm.engine.generation import DEFAULT_MAX_TOKENS  # the messages API requires one
from llm.engine.prompt_cache import marked_prefixes, prefix_pieces
from llm.engine.providers.errors import provider_faults

# Anthropic's SDK 2.x speaks an API version that refuses every sampling parameter (temperature,
# top_p, top_k, even at their defaults) and has no arguments for them; earlier SDKs speak the
# version that takes them. Sampling settings are sent only where the SDK can send them.
SENDS_SAMPLING = "temperature" in inspect.signature(anthropic.resources.Messages.create).parameters

# Stop reasons in the vocabulary ChatResponse.finish_reason uses for every provider.
_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


# The content blocks that carry a turn's reasoning, kept with it as the API returned them.
THINKING_KINDS = frozenset({"thinking", "redacted_thinking"})


class AnthropicChatProvider:
    """One Anthropic model. Makes exactly one HTTP call per chat()."""

    def __init__(self, *, model_name: str, api_key: str, base_url: str, timeout_seconds: float):
        self.model_name = model_name
        # max_retries=0: the client's retry policy is the only one, so waits are predictable.
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url or None, timeout=timeout_seconds, max_retries=0
        )
        self.base_url = str(self._client.base_url)

    def chat(self, request: ChatRequest) -> ChatResponse:
        arguments = self.render(request)
        started = time.perf_counter()
        with provider_faults(anthropic, model=request.model, secrets=(self._client.api_key,)):
            message = self._client.messages.create(**arguments)
            latency_ms = (time.perf_counter() - started) * 1000
            return parse_message(message, model=request.model, latency_ms=latency_ms)

    def render(self, request: ChatRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": cache_marked_messages(
                render_messages(request.messages),
                marked_prefixes(request),
                latest=request.cache_latest,
            ),
        }
        # The stable prefix (tool list, then system prompt) is marked for the prompt cache, so
        # an agent's later turns and a judge's later calls read it at a tenth of the price.
        if request.system:
            arguments["system"] = [{"type": "text", "text": request.system, **CACHED}]
        if request.tools:
            tools = [tool.to_anthropic() for tool in request.tools]
            tools[-1] = {**tools[-1], **CACHED}
            arguments["tools"] = tools
        if SENDS_SAMPLING and request.temperature is not None:
            arguments["temperature"] = request.temperature
        if SENDS_SAMPLING and request.top_p is not None:
            arguments["top_p"] = request.top_p
        if request.thinking_budget is not None:
            arguments["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
        output_config = {}
        if request.reasoning_effort is not None:
            output_config["effort"] = request.reasoning_effort
        schema = claude_schema(request.json_schema) if request.json_schema else None
        if schema is not None:
            output_config["format"] = {"type": "json_schema", "schema": schema}
        if output_config:
            arguments["output_config"] = output_config
        return arguments


# What Claude's structured outputs do not hold an answer to (numeric and string bounds,
# patterns, formats, list sizes): left out of what is sent. The answer is still checked here
# against the whole schema, and repaired when it misses.
CLAUDE_UNSUPPORTED = frozenset(
    [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    ]
)


def claude_schema(schema: Any) -> Any:
    """The schema as Claude's structured outputs take it: without the keywords it does not
    support, every object closed (`additionalProperties: false`, which it requires). None when
    some object names no properties or allows others (a free-form mapping Claude cannot be held
    to): the prompt alone asks for that answer."""
    if isinstance(schema, list):
        parts = [claude_schema(part) for part in schema]
        return None if any(part is None for part in parts) else parts
    if not isinstance(schema, dict):
        return schema
    is_object = schema.get("type") == "object" or "properties" in schema
    open_ended = not schema.get("properties") or schema.get("additionalProperties", False)
    if is_object and open_ended:
        return None
    kept = {}
    for key, value in schema.items():
        if key in CLAUDE_UNSUPPORTED:
            continue
        if key == "properties":
            value = {name: claude_schema(part) for name, part in value.items()}
            if any(part is None for part in value.values()):
                return None
        elif isinstance(value, (dict, list)) and key not in ("enum", "const", "required"):
            value = claude_schema(value)
            if value is None:
                return None
        kept[key] = value
    if "properties" in kept:
        kept["additionalProperties"] = False
    return kept


# A prompt-cache breakpoint: everything up to and including the block that carries it is
# cached (5-minute entries). A request may carry up to 4 (prompt_cache.MAX_BREAKPOINTS); this
# adapter sets them on the tools, the system prompt, the stable prefixes of the first message
# (the rubric's, the case's: prompt_cache.marked_prefixes) and the latest message.
CACHED = {"cache_control": {"type": "ephemeral"}}


def cache_marked_messages(
    turns: list[dict[str, Any]], prefixes: tuple[int, ...], *, latest: bool = False
) -> list[dict[str, Any]]:
    """`turns` with the first `prefixes` characters of the first user message marked as cache
    prefixes (that text goes as several blocks, each stable one carrying a breakpoint) and,
    with `latest`, the last block of the last turn marked too: the next turn of the
    conversation re-sends all of it, and the API finds that prefix from the new breakpoint."""
    turns = _prefix_marked(turns, prefixes)
    if latest and turns:
        *earlier, last = turns
        content = list(last["content"])
        if content and _markable(content[-1]):
            content[-1] = {**content[-1], **CACHED}
            turns = [*earlier, {**last, "content": content}]
    return turns


def _markable(block: dict[str, Any]) -> bool:
    """The API refuses a breakpoint on a thinking block or an empty text block."""
    if block["type"] in THINKING_KINDS:
        return False
    return block["type"] != "text" or bool(block["text"])


def _prefix_marked(turns: list[dict[str, Any]], prefixes: tuple[int, ...]) -> list[dict[str, Any]]:
    if not prefixes or not turns or turns[0]["role"] != "user":
        return turns
    first, *rest = turns[0]["content"]
    if first["type"] != "text":
        return turns
    blocks = [
        {"type": "text", "text": piece, **(CACHED if marked else {})}
        for piece, marked in prefix_pieces(first["text"], prefixes)
    ]
    if not blocks:  # an empty text: the API refuses a breakpoint on it
        return turns
    return [{"role": "user", "content": [*blocks, *rest]}, *turns[1:]]


def render_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Anthropic turns alternate user/assistant, and tool results travel inside a user turn,
    so consecutive messages that map to the same role are merged into one turn."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        ]
    # A turn that called tools goes back with its thinking first, unchanged, signature and all:
    # the API refuses (or reasons worse on) a tool result whose call lost its thinking.
    blocks = [dict(block) for block in message.reasoning_blocks if block["type"] in THINKING_KINDS]
    if message.content or not message.tool_calls:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)}
        for call in message.tool_calls
    )
    return blocks


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        value = None
    # tool_use input must be an object; malformed arguments are replayed as their raw text
    # so the history the model sees stays truthful.
    return value if isinstance(value, dict) else {"raw_arguments": arguments}


def parse_message(message: Any, *, model: str, latency_ms: float) -> ChatResponse:
    texts: list[str] = []
    thoughts: list[str] = []
    kept: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "thinking":
            thoughts.append(block.thinking)
            kept.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block.type == "redacted_thinking":
            thoughts.append("[redacted thinking]")
            kept.append({"type": "redacted_thinking", "data": block.data})
        elif block.type == "tool_use":
            calls.append(
                ToolCall(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
            )
    return ChatResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        reasoning="\n\n".join(thoughts),
        reasoning_blocks=tuple(kept),
        usage=_usage(message.usage),
        latency_ms=latency_ms,
        finish_reason=_FINISH_REASONS.get(message.stop_reason or "", message.stop_reason or "stop"),
        model=model,
        refusal=_refusal(message.stop_reason, "".join(texts)),
    )


def _refusal(stop_reason: str | None, text: str) -> str:
    """Claude's refusal: the stop reason says so, the text (often none) is what came before."""
    if stop_reason != "refusal":
        return ""
    return text.strip() or REFUSED_WITHOUT_TEXT


def _usage(usage: Any) -> Usage:
    # Anthropic's input_tokens are only the input after the last cache breakpoint; the tokens
    # read from and written to the prompt cache come apart, and all three are the prompt.
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    return Usage(
        input_tokens=usage.input_tokens + read + written,
        output_tokens=usage.output_tokens,
        cached_input_tokens=read,
        cache_write_tokens=written,
    )
