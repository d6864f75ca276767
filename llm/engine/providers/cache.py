"""Response cache: a repeated call with the same inputs is answered from the store for free.

The key is the sha256 of canonical JSON of everything that can change a model's answer:
provider, model, base URL, system prompt, messages, tools and sampling settings, plus the
request's `sample` (which conversation seed, judge slot or entry the call draws for), so that
repetitions never copy each other while a replay of the same sample is free. The provider
seed derived from the sample (llm.engine.seeds) is not part of the key: the sample already is.
Hints are left out for real models (they never see them) but kept for the offline scripted
provider, whose answer is computed from them and from the purpose.

Only answers the caller accepted should stay: a structured call whose answer failed
validation removes its entry (`forget`), so a retry asks the model again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import threading
from dataclasses import asdict
from decimal import Decimal
from functools import lru_cache
from typing import Any, Protocol

import redis

from llm.engine.chat import ChatRequest, ChatResponse, Message, ToolCall, Usage
from llm.engine.seeds import provider_seed

logger = logging.getLogger("llm.cache")
# What a cache backend raises when its store cannot be reached (Redis down, a full disk).
UNREACHABLE = (redis.RedisError, OSError)

# Bump when the key recipe or the stored format changes, so old entries are never misread.
KEY_VERSION = "v2"


class CacheStore(Protocol):
    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...

    def delete(self, key: str) -> None: ...


class InMemoryStore:
    def __init__(self) -> None:
        self._values: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            return self._values.get(key)

    def set(self, key: str, value: str) -> None:
        with self._lock:
            self._values[key] = value

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_parts(
    request: ChatRequest, *, provider: str, base_url: str, messages: bool = True
) -> dict[str, Any]:
    """What the key is made of (without the messages when `messages` is False)."""
    parts: dict[str, Any] = {
        "provider": provider,
        "model": request.model,
        "base_url": base_url,
        "system": request.system,
        "tools": [asdict(tool) for tool in request.tools],
        "sampling": sampling_key(request),
        "sample": request.sample,
    }
    if messages:
        parts["messages"] = [message_key(message) for message in request.messages]
    if provider == "offline":
        parts["purpose"] = request.purpose
        parts["hints"] = request.hints
    return parts


def message_key(message: Message) -> dict[str, Any]:
    """A message as the key sees it. Reasoning blocks join only when a turn has them, so the
    keys of conversations without any (every one before they were kept) stay what they were."""
    parts = asdict(message)
    if not message.reasoning_blocks:
        del parts["reasoning_blocks"]
    return parts


def sampling_key(request: ChatRequest) -> dict[str, Any]:
    """The sampling settings a cached answer depends on. top_p and the reasoning settings join
    only when set, so the keys of calls that never set them (every call before they existed)
    stay what they were."""
    sampling: dict[str, Any] = {
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.top_p is not None:
        sampling["top_p"] = request.top_p
    for name in ("reasoning_effort", "thinking_budget", "thinking_switch", "json_schema"):
        if getattr(request, name) is not None:
            sampling[name] = getattr(request, name)
    # A seed derived from the sample (every seed generation.apply gives) adds nothing the
    # sample does not already say; only a seed set otherwise joins the key.
    if request.seed is not None and request.seed != provider_seed(request.sample, request.purpose):
        sampling["seed"] = request.seed
    return sampling


def cache_key(request: ChatRequest, *, provider: str, base_url: str) -> str:
    """sha256 of canonical_json(key_parts(...)), with each message's JSON written once.

    A conversation's every call carries the whole history so far, and turning every message
    into a dict again on each call was a fifth of a conversation's CPU (issue 34). The text
    hashed is the same, character for character: the parts without the messages, with the
    messages' list (each message's canonical JSON, remembered) put where they belong."""
    parts = key_parts(request, provider=provider, base_url=base_url, messages=False)
    parts["messages"] = _MESSAGES_SLOT
    messages = "[" + ",".join(_message_json(message) for message in request.messages) + "]"
    text = canonical_json(parts).replace(_QUOTED_SLOT, messages, 1)
    return f"llm:{KEY_VERSION}:{_sha256(text)}"


# Stands for the messages in the parts' JSON until their text is put in; random, so no value
# of a request can hold it.
_MESSAGES_SLOT = f"messages-{secrets.token_hex(16)}"
_QUOTED_SLOT = canonical_json(_MESSAGES_SLOT)


def _message_json(message: Message) -> str:
    try:
        return _hashable_message_json(message)
    except TypeError:  # reasoning blocks (dicts) make a message unhashable: not remembered
        return canonical_json(message_key(message))


# Messages are immutable: the history of a conversation's calls shares them. 1,024 covers
# the histories (tens of messages) of the conversations a worker plays at once, and bounds
# what it holds: a message and its text, a few kilobytes each, a few megabytes in all.
@lru_cache(maxsize=1024)
def _hashable_message_json(message: Message) -> str:
    return canonical_json(message_key(message))


def explain_key(request: ChatRequest, *, provider: str, base_url: str) -> dict[str, Any]:
    """The key and a hash of each part, to see which part differs between two calls."""
    parts = key_parts(request, provider=provider, base_url=base_url)
    return {
        "key": cache_key(request, provider=provider, base_url=base_url),
        "provider": provider,
        "model": request.model,
        "base_url": base_url,
        "part_hashes": {name: _sha256(canonical_json(value)) for name, value in parts.items()},
    }


def response_to_json(response: ChatResponse) -> str:
    return canonical_json(
        {
            "text": response.text,
            "tool_calls": [asdict(call) for call in response.tool_calls],
            "reasoning": response.reasoning,
            "reasoning_blocks": list(response.reasoning_blocks),
            "usage": asdict(response.usage),
            "latency_ms": response.latency_ms,
            "finish_reason": response.finish_reason,
            "model": response.model,
            "refusal": response.refusal,
            "seed": response.seed,
            "fingerprint": response.fingerprint,
        }
    )


def response_from_json(text: str) -> ChatResponse:
    """A stored response, marked cached; a rerun costs nothing, the usage stays the original."""
    data = json.loads(text)
    return ChatResponse(
        text=data["text"],
        tool_calls=tuple(ToolCall(**call) for call in data["tool_calls"]),
        reasoning=data["reasoning"],
        reasoning_blocks=tuple(data.get("reasoning_blocks", ())),
        usage=Usage(**data["usage"]),
        latency_ms=data["latency_ms"],
        finish_reason=data["finish_reason"],
        model=data["model"],
        refusal=data.get("refusal", ""),  # absent from answers stored before refusals were kept
        # Absent from answers stored before seeds were sent: none was.
        seed=data.get("seed"),
        fingerprint=data.get("fingerprint", ""),
        cost_usd=Decimal(0),
        list_cost_usd=Decimal(0),
        cached=True,
    )
