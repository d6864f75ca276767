"""OpenAI chat completions with tools. The same code serves any OpenAI-compatible server
(vLLM, Ollama, llama.cpp server) given its base URL."""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from llm.engine.chat import (
    ChatRequest,
    ChatResponse,
    Message,
    ProviderError,
    ToolCall,
    Usage,
    body_json,
)
from llm.engine.providers.errors import provider_faults

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
CHAT_PATH = "/chat/completions"
# How a turn's reasoning field is kept in ChatResponse.reasoning_blocks.
REASONING_FIELD_BLOCK = "reasoning_field"


class OpenAIEndpoint:
    """One model behind one OpenAI endpoint (`path`): what both OpenAI adapters (chat
    completions, the Responses API) share. Makes exactly one HTTP call per chat()."""

    path: str
    reply_type: type

    def __init__(self, *, model_name: str, api_key: str, base_url: str, timeout_seconds: float):
        self.model_name = model_name
        # max_retries=0: the client's retry policy is the only one, so waits are predictable.
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url or None, timeout=timeout_seconds, max_retries=0
        )
        self.base_url = str(self._client.base_url)
        # The endpoint's whole URL, joined once as the client joins a path to its base URL
        # (which ends with "/"): given a path, the client parses and joins them on every call.
        self._url = self.base_url + self.path.lstrip("/")

    def chat(self, request: ChatRequest) -> ChatResponse:
        started = time.perf_counter()
        with provider_faults(openai, model=request.model, secrets=(self._client.api_key,)):
            # The endpoint's own method walks the whole body (every message of the history,
            # every tool) through the SDK's type-driven transform on every call, to change
            # nothing in a body of plain JSON like this one; the client's post sends it as it
            # is, through the same transport, auth and errors.
            reply = self._client.post(self._url, **self.payload(request), cast_to=self.wire_type)
            latency_ms = (time.perf_counter() - started) * 1000
            return self.parse(self.read(reply), model=request.model, latency_ms=latency_ms)

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The client post's body argument: `body`, the rendered dict the client encodes, or
        `content`, the body already encoded."""
        return {"body": self.render(request)}

    @property
    def wire_type(self) -> type:
        """What the client's post returns: the reply type, or the body's bytes."""
        return self.reply_type

    def read(self, reply: Any) -> Any:
        """The reply as `parse` reads it, from what the post returned."""
        return reply

    def render(self, request: ChatRequest) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, reply: Any, *, model: str, latency_ms: float) -> ChatResponse:
        raise NotImplementedError


class OpenAIChatProvider(OpenAIEndpoint):
    """One model behind an OpenAI-style chat completions endpoint."""

    path = CHAT_PATH
    reply_type = ChatCompletion
    # The body is read as plain JSON: the SDK building a ChatCompletion of nested models from
    # it cost more CPU than the rest of the call's parsing (issue 34), and parse_completion
    # reads the same fields either way.
    wire_type = bytes

    def read(self, reply: bytes) -> Any:
        return json.loads(reply, object_hook=JsonReply)

    def __init__(self, *, max_tokens_field: str = "max_completion_tokens", **connection: Any):
        super().__init__(**connection)
        # OpenAI's newer models take max_completion_tokens; most compatible servers only
        # know the older max_tokens.
        self.max_tokens_field = max_tokens_field

    def parse(self, reply: Any, *, model: str, latency_ms: float) -> ChatResponse:
        return parse_completion(reply, model=model, latency_ms=latency_ms)

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        return {"content": self.encode(request)}

    def encode(self, request: ChatRequest) -> bytes:
        """The body as the client encodes `render`'s dict, character for character, but with
        each tool's JSON written once (ToolSpec.openai_json): the tool schemas, the same on
        every agent call, were half its body and most of the CPU its encoding took."""
        text = body_json(self._arguments(request, tools=_TOOLS_SLOT))
        if request.tools:
            tools = "[" + ",".join(tool.openai_json for tool in request.tools) + "]"
            text = text.replace(_QUOTED_TOOLS_SLOT, tools, 1)
        return text.encode()

    def render(self, request: ChatRequest) -> dict[str, Any]:
        return self._arguments(request, tools=[tool.to_openai() for tool in request.tools])

    def _arguments(self, request: ChatRequest, *, tools: Any) -> dict[str, Any]:
        """The body with `tools` standing for the request's tools (when it has any)."""
        arguments: dict[str, Any] = {
            "model": self.model_name,
            "messages": render_messages(request),
        }
        if request.tools:
            arguments["tools"] = tools
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments[self.max_tokens_field] = request.max_tokens
        if request.top_p is not None:
            arguments["top_p"] = request.top_p
        if request.reasoning_effort is not None:
            arguments["reasoning_effort"] = request.reasoning_effort
        if request.seed is not None:
            # Best-effort determinism: the same seed and inputs give the same answer while
            # the backend (the reply's system_fingerprint) stays the same.
            arguments["seed"] = request.seed
        if request.thinking_switch is not None:
            # vLLM passes these to the model's chat template: Qwen3 thinks unless told not to.
            arguments["chat_template_kwargs"] = {"enable_thinking": request.thinking_switch}
        if request.json_schema is not None:
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.json_schema, "strict": False},
            }
        return arguments


# Stands for the tools in the body's JSON until their text is put in; random, so no value of
# a request can hold it.
_TOOLS_SLOT = f"tools-{secrets.token_hex(16)}"
_QUOTED_TOOLS_SLOT = body_json(_TOOLS_SLOT)


class JsonReply:
    """A JSON object of a reply read as a model's attributes: a field the server left out
    reads as None, as on the SDK's reply types."""

    def __init__(self, fields: dict[str, Any]):
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:  # only for names the reply does not have
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def render_messages(request: ChatRequest) -> list[dict[str, Any]]:
    rendered = [{"role": "system", "content": request.system}] if request.system else []
    rendered.extend(_render_message(message) for message in request.messages)
    return rendered


def _render_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return _returned_reasoning(message) | {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _returned_reasoning(message: Message) -> dict[str, str]:
    """The reasoning field a server sent with a turn that called tools, under its own name:
    vLLM serving GPT-OSS or Qwen3 reads it back to continue the same line of thought."""
    return {
        block["field"]: block["text"]
        for block in message.reasoning_blocks
        if block["type"] == REASONING_FIELD_BLOCK
    }


def parse_completion(completion: Any, *, model: str, latency_ms: float) -> ChatResponse:
    if not completion.choices:
        raise ProviderError("the model server answered with no choices", kind="malformed")
    choice = completion.choices[0]
    message = choice.message
    text, inline_reasoning = split_reasoning(message.content or "")
    field, field_text = _reasoning_field(message)
    reasoning = "\n\n".join(part for part in (field_text.strip(), inline_reasoning) if part)
    kept = ({"type": REASONING_FIELD_BLOCK, "field": field, "text": field_text},) if field else ()
    return ChatResponse(
        text=text,
        tool_calls=_tool_calls(message),
        reasoning=reasoning,
        reasoning_blocks=kept,
        usage=completion_usage(completion.usage),
        latency_ms=latency_ms,
        finish_reason=choice.finish_reason or "stop",
        model=model,
        # A refusal comes in its own field, with content null: without this it read as an
        # empty answer.
        refusal=(getattr(message, "refusal", None) or "").strip(),
        fingerprint=getattr(completion, "system_fingerprint", None) or "",
    )


def completion_usage(usage: Any) -> Usage:
    """Chat completions usage. OpenAI counts its automatic prompt-cache hits inside
    prompt_tokens and again in prompt_tokens_details.cached_tokens; a compatible server that
    sends no details (or no usage) read nothing from a cache, as far as billing knows."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cached_input_tokens=getattr(details, "cached_tokens", None) or 0,
    )


def _tool_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = []
    for index, call in enumerate(message.tool_calls or ()):
        function = getattr(call, "function", None)
        if function is None:
            continue  # a non-function tool type; we only ever declare functions
        # Arguments stay raw text, even when not valid JSON: the loop reports that to the
        # model as a tool error. Some local servers omit ids, so one is made up.
        calls.append(ToolCall(call.id or f"call_{index}", function.name, function.arguments or ""))
    return tuple(calls)


def _reasoning_field(message: Any) -> tuple[str, str]:
    """(name, text) of the thinking vLLM and DeepSeek-style servers return as reasoning_content
    (or reasoning); ("", "") when there is none."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value.strip():
            return name, value
    return "", ""


def split_reasoning(content: str) -> tuple[str, str]:
    """Separate <think>...</think> thinking from the visible text: (visible, reasoning)."""
    thoughts = [thought.strip() for thought in _THINK_BLOCK.findall(content)]
    visible = _THINK_BLOCK.sub("", content)
    # Some chat templates open <think> inside the prompt, so only the closing tag appears.
    if "</think>" in visible:
        before, _, visible = visible.partition("</think>")
        thoughts.insert(0, before.strip())
    # A truncated answer may stop inside a thought that never closes.
    if "<think>" in visible:
        visible, _, after = visible.partition("<think>")
        thoughts.append(after.strip())
    if not thoughts:
        return content, ""
    return visible.strip(), "\n\n".join(thought for thought in thoughts if thought)
