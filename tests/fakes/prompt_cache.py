"""The fake server's prompt cache: which part of a request's prompt a real provider would have
read from its cache, or written to it, for the fake to report in the usage the SDKs expect.

Tokens are counted as the rest of the project estimates them, 4 characters a token, over a
canonical text of the prompt in the order the provider reads it (tools, then the system prompt,
then the messages). Like the real caches, nothing shorter than MIN_CACHED_TOKENS is cached.

- OpenAI (chat completions and Responses): automatic. The longest prefix, in steps of
  STEP_TOKENS past the minimum, that an earlier request also began with is read from the cache.
  Nothing is reported as written (OpenAI charges nothing extra for it).
- Anthropic: only up to a `cache_control` breakpoint. The longest breakpoint prefix seen before
  is read; from there to the last breakpoint is written (and remembered for the next request).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
MIN_CACHED_TOKENS = 1024
STEP_TOKENS = 128


@dataclass(frozen=True)
class PromptUsage:
    input_tokens: int  # the whole prompt
    cached_tokens: int = 0  # read from the cache (part of input_tokens)
    cache_write_tokens: int = 0  # written to the cache (part of input_tokens)


def tokens(characters: int) -> int:
    return characters // CHARS_PER_TOKEN


class PromptCache:
    """The prefixes seen so far, by hash; thread-safe (the fake serves on many threads)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, dialect: str, body: dict[str, Any]) -> PromptUsage:
        if dialect == "anthropic":
            return self._anthropic(body)
        text = _responses_text(body) if dialect == "openai-responses" else _chat_text(body)
        return self._automatic(text)

    def _automatic(self, text: str) -> PromptUsage:
        first = MIN_CACHED_TOKENS * CHARS_PER_TOKEN
        step = STEP_TOKENS * CHARS_PER_TOKEN
        hashes = _prefix_hashes(text, range(first, len(text) + 1, step))
        with self._lock:
            read = max((end for end, digest in hashes if digest in self._seen), default=0)
            self._seen.update(digest for _, digest in hashes)
        return PromptUsage(tokens(len(text)), cached_tokens=tokens(read))

    def _anthropic(self, body: dict[str, Any]) -> PromptUsage:
        text, breakpoints = _anthropic_text(body)
        cacheable = [end for end in breakpoints if tokens(end) >= MIN_CACHED_TOKENS]
        hashes = _prefix_hashes(text, cacheable)
        with self._lock:
            read = max((end for end, digest in hashes if digest in self._seen), default=0)
            self._seen.update(digest for _, digest in hashes)
        written = max(cacheable, default=0) - read if cacheable else 0
        return PromptUsage(
            tokens(len(text)), cached_tokens=tokens(read), cache_write_tokens=tokens(written)
        )


def _prefix_hashes(text: str, ends: Any) -> list[tuple[int, str]]:
    """(end, sha256 of text[:end]) for each end, in one pass over the text."""
    digest = hashlib.sha256()
    hashes, start = [], 0
    for end in sorted(set(ends)):
        digest.update(text[start:end].encode())
        hashes.append((end, digest.copy().hexdigest()))
        start = end
    return hashes


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _chat_text(body: dict[str, Any]) -> str:
    return _canonical(body.get("tools", [])) + "".join(
        _canonical(message) for message in body.get("messages", [])
    )


def _responses_text(body: dict[str, Any]) -> str:
    items = body.get("input", [])
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    return (
        _canonical(body.get("tools", []))
        + _canonical(body.get("instructions", ""))
        + "".join(_canonical(item) for item in items)
    )


def _anthropic_text(body: dict[str, Any]) -> tuple[str, list[int]]:
    """The prompt as one text (breakpoint marks left out, so marking a block does not change
    what it caches) and the offsets where a block carrying a breakpoint ends."""
    system = body.get("system", [])
    blocks = [*body.get("tools", []), *([{"text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages", []):
        content = message.get("content")
        blocks.extend([{"text": content}] if isinstance(content, str) else content)
    text, breakpoints = "", []
    for block in blocks:
        text += _canonical({key: value for key, value in block.items() if key != "cache_control"})
        if "cache_control" in block:
            breakpoints.append(len(text))
    return text, breakpoints
