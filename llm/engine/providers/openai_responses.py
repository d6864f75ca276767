"""OpenAI's Responses API with tools: the second OpenAI adapter, the one OpenAI recommends for
its reasoning models. A model string chooses it with `@api=responses`.

Nothing is stored at OpenAI (`store: false`), so a reasoning model's thinking cannot be
found again by `previous_response_id`: each reply's reasoning items come back encrypted
(`include: ["reasoning.encrypted_content"]`), are kept with the turn that produced them, and
go back in the next request's input, unchanged and ahead of that turn's function calls, where
the model picks its line of thought up again. The same tool loop, trace, accounting and
retries serve both OpenAI adapters.
"""

from __future__ import annotations

from typing import Any

from openai.types.responses import Response

from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError, ToolCall, Usage
from llm.engine.providers.openai_chat import OpenAIEndpoint

RESPONSES_PATH = "/responses"
# How a reply's reasoning item is kept in ChatResponse.reasoning_blocks: the item as it came.
REASONING_ITEM_BLOCK = "responses_reasoning_item"


class OpenAIResponsesProvider(OpenAIEndpoint):
    """One model behind OpenAI's /responses."""

    path = RESPONSES_PATH
    reply_type = Response

    def parse(self, reply: Any, *, model: str, latency_ms: float) -> ChatResponse:
        return parse_response(reply, model=model, latency_ms=latency_ms)

    def render(self, request: ChatRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model_name,
            "input": render_input(request.messages),
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        if request.system:
            arguments["instructions"] = request.system
        if request.tools:
            arguments["tools"] = [tool.to_openai_responses() for tool in request.tools]
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.top_p is not None:
            arguments["top_p"] = request.top_p
        if request.max_tokens is not None:
            arguments["max_output_tokens"] = request.max_tokens
        if request.reasoning_effort is not None:
            arguments["reasoning"] = {"effort": request.reasoning_effort}
        if request.json_schema is not None:
            arguments["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": "answer",
                    "schema": request.json_schema,
                    "strict": False,
                }
            }
        return arguments


def render_input(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            items.extend(_tool_turn(message))
        else:
            items.append({"role": message.role, "content": message.content})
    return items


def _tool_turn(message: Message) -> list[dict[str, Any]]:
    """A turn that called tools: its reasoning items first, as they came, then its words (if
    any) and its calls."""
    items = [
        block["item"] for block in message.reasoning_blocks if block["type"] == REASONING_ITEM_BLOCK
    ]
    if message.content:
        items.append({"role": "assistant", "content": message.content})
    items.extend(_function_call(call) for call in message.tool_calls)
    return items


def _function_call(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
    }


def parse_response(response: Any, *, model: str, latency_ms: float) -> ChatResponse:
    texts: list[str] = []
    refusals: list[str] = []
    thoughts: list[str] = []
    kept: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for item in response.output or ():
        if item.type == "message":
            for part in item.content or ():
                if part.type == "output_text":
                    texts.append(part.text)
                elif part.type == "refusal":
                    refusals.append(part.refusal)
        elif item.type == "function_call":
            calls.append(ToolCall(item.call_id, item.name, item.arguments or ""))
        elif item.type == "reasoning":
            thoughts.extend(part.text for part in item.summary or () if part.text)
            kept.append({"type": REASONING_ITEM_BLOCK, "item": _reasoning_item(item)})
    if response.status == "failed":
        raise ProviderError("the response failed at the provider", kind="server")
    return ChatResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        reasoning="\n\n".join(thoughts),
        reasoning_blocks=tuple(kept),
        usage=_usage(response.usage),
        latency_ms=latency_ms,
        finish_reason=_finish_reason(response, calls),
        model=model,
        refusal=" ".join(refusals).strip(),
    )


def _reasoning_item(item: Any) -> dict[str, Any]:
    """The reasoning item as the next request's input takes it back."""
    kept = {
        "type": "reasoning",
        "id": item.id,
        "summary": [{"type": "summary_text", "text": part.text} for part in item.summary or ()],
    }
    if item.encrypted_content:
        kept["encrypted_content"] = item.encrypted_content
    return kept


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    # As in chat completions, the cached tokens are part of input_tokens.
    details = getattr(usage, "input_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cached_input_tokens=getattr(details, "cached_tokens", None) or 0,
    )


def _finish_reason(response: Any, calls: list[ToolCall]) -> str:
    details = response.incomplete_details
    if response.status == "incomplete" and details:
        # Cut off: at the output limit (a length cut-off, as in chat completions) or by the
        # content filter.
        return "length" if details.reason == "max_output_tokens" else str(details.reason)
    return "tool_calls" if calls else "stop"
