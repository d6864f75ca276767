"""The offline scripted provider: deterministic rules, not a model.

It plays every role (enricher, roster generator, patient, assistant, judge) by transparent
rules so that the demo and the tests run with no network. Each role's script lives next to
the code that owns that role; this module only dispatches. Results produced by it are
labelled "scripted" everywhere they are shown.

Model strings: offline/<behaviour>, e.g. offline/careful, offline/careless.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Mapping

from llm.engine.chat import ChatRequest, ChatResponse, ProviderError

# purpose -> "module:function", each taking (request, behaviour) -> ChatResponse. The app that
# owns a role registers its scripts when it is ready (scripts_register): this layer, below
# every app, names none of them.
SCRIPTS: dict[str, str] = {}


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
        time.sleep(max(0.0, self.latency_seconds - (time.perf_counter() - started)))
        latency = (time.perf_counter() - started) * 1000
        return ChatResponse(
            text=response.text,
            tool_calls=response.tool_calls,
            reasoning=response.reasoning,
            usage=response.usage,
            latency_ms=latency,
            finish_reason=response.finish_reason,
            model=request.model,
            cost_usd=response.cost_usd,
        )
