"""The offline scripted provider: deterministic rules, not a model.

It plays every role (enricher, roster generator, patient, assistant, judge) by transparent
rules so that the demo and the tests run with no network. Each role's script lives next to
the code that owns that role; this module only dispatches. Results produced by it are
labelled "scripted" everywhere they are shown.

Model strings: offline/<behaviour>, e.g. offline/careful, offline/careless.

Each answer's usage reports the prompt-cache reads and writes a provider would have given it
(llm.engine.prompt_cache, Anthropic's rules over the breakpoints Anthropic's adapter would
mark), so that a pilot run played offline measures what caching saves a real run.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Mapping
from dataclasses import replace

from llm.engine.chat import ChatRequest, ChatResponse, Message, ProviderError, Usage
from llm.engine.prompt_cache import Block, PromptCache, marked_prefixes, prefix_pieces

# purpose -> "module:function", each taking (request, behaviour) -> ChatResponse. The app that
# owns a role registers its scripts when it is ready (scripts_register): this layer, below
# every app, names none of them.
SCRIPTS: dict[str, str] = {}
# One per process, as one provider-side cache serves every call of an account.
PROMPT_CACHE = PromptCache()


def scripts_register(scripts: Mapping[str, str]) -> None:
    SCRIPTS.update(scripts)


class OfflineProvider:
    """Scripted provider. `behaviour` is the part after "offline/"."""

    def __init__(self, behaviour: str, latency_seconds: float = 0.0):
        self.behaviour = behaviour
        # A stand-in for a remote model's response time (OFFLINE_LATENCY_MS), so that load
        # tests and crash rehearsals have work in flight to interrupt; 0 answers at once.
        self.latency_seconds = latency_seconds

    def chat(self, request: ChatRequest) -> ChatResponse:
        target = SCRIPTS.get(request.purpose)
        if target is None:
            raise ProviderError(
                f"offline provider has no script for purpose {request.purpose!r}",
                kind="bad_request",
            )
        module_name, function_name = target.split(":")
        script = getattr(importlib.import_module(module_name), function_name)
        started = time.perf_counter()
        response = script(request, self.behaviour)
        usage = cached_usage(request, response.usage)  # inside the answer's time, as a provider's
        time.sleep(max(0.0, self.latency_seconds - (time.perf_counter() - started)))
        latency = (time.perf_counter() - started) * 1000
        return ChatResponse(
            text=response.text,
            tool_calls=response.tool_calls,
            reasoning=response.reasoning,
            usage=usage,
            latency_ms=latency,
            finish_reason=response.finish_reason,
            model=request.model,
            cost_usd=response.cost_usd,
        )


def cached_usage(request: ChatRequest, usage: Usage, cache: PromptCache = PROMPT_CACHE) -> Usage:
    """`usage` with the share of its prompt a provider's cache would have read or written.
    The scripts count their prompts their own way, so the simulation's shares are applied to
    the script's count rather than its own token numbers."""
    simulated = cache.marked(request.model, prompt_blocks(request))
    if not simulated.input_tokens or not usage.input_tokens:
        return usage
    read = usage.input_tokens * simulated.cached_tokens // simulated.input_tokens
    written = usage.input_tokens * simulated.cache_write_tokens // simulated.input_tokens
    return replace(usage, cached_input_tokens=read, cache_write_tokens=written)


def prompt_blocks(request: ChatRequest) -> list[Block]:
    """The request as Anthropic's adapter sends it, in blocks, with the breakpoints it marks:
    the last tool, the system prompt, the stable prefix of the first message and, for a
    conversation's turn, the latest message."""
    blocks = [
        Block(tool.name + tool.description + json.dumps(tool.parameters, sort_keys=True))
        for tool in request.tools
    ]
    if blocks:
        blocks[-1] = Block(blocks[-1].text, breakpoint=True)
    if request.system:
        blocks.append(Block(request.system, breakpoint=True))
    prefixes = marked_prefixes(request)
    for index, message in enumerate(request.messages):
        head = f"{message.role}:"
        text = head + _message_text(message)
        first_user = index == 0 and message.role == "user" and prefixes
        blocks += _split_at(text, [len(head) + chars for chars in prefixes] if first_user else [])
    if request.cache_latest and request.messages:
        blocks[-1] = Block(blocks[-1].text, breakpoint=True)
    return blocks


def _split_at(text: str, cuts: list[int]) -> list[Block]:
    return [Block(piece, breakpoint=marked) for piece, marked in prefix_pieces(text, cuts)]


def _message_text(message: Message) -> str:
    return message.content + "".join(call.name + call.arguments for call in message.tool_calls)
