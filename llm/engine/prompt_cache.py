"""A simulation of the providers' prompt caches: which part of a prompt a real provider would
read from its cache, or write to it, given the prompts it has seen. The offline scripted
provider reports its usage through it, so a pilot run measures cache reads a real run would
have; the local fake server (tests/fakes/) reports them through it in the SDKs' wire formats.

A prompt is a sequence of blocks in the order the provider reads it (tools, system prompt,
messages), each a text and whether it carries a cache breakpoint. Tokens are counted as the
rest of the project estimates them, 4 characters a token. Entries belong to one `scope` (a
model: providers never share a cache between models), live `ttl_seconds` (5 minutes) and are
refreshed when read. Nothing shorter than the provider's minimum is cached.

- Anthropic (`marked`): only prefixes that end at a `cache_control` breakpoint are written.
  A request reads the longest prefix written before that ends at a block boundary no more
  than LOOKBACK_BLOCKS blocks before one of its breakpoints (the API checks that far back,
  which is how a conversation whose breakpoint moves to its newest message each turn reads
  the previous turn's prefix). From there to its last breakpoint is written (billed 1.25x).
- OpenAI (`automatic`): every prompt of MIN_TOKENS or more is cached without marks, in steps
  of STEP_TOKENS past the minimum; a request reads the longest such prefix seen before.
  Nothing is reported as written (OpenAI bills no extra for it).

Pure Python and thread-safe (the fake answers on many threads; workers call from several).
The state is one process's: calls spread over several worker processes are each cached apart,
so a multi-process run reports fewer reads than one provider-side cache would give.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm.engine.chat import ChatRequest

CHARS_PER_TOKEN = 4
MIN_TOKENS = 1024
STEP_TOKENS = 128
TTL_SECONDS = 300.0
LOOKBACK_BLOCKS = 20
# Expired entries are swept once the table has grown by this many since the last sweep; past
# MAX_ENTRIES live ones, the half closest to lapsing goes too (a provider evicts under
# pressure as well), so a long offline run keeps its memory bounded.
SWEEP_EVERY = 10_000
MAX_ENTRIES = 400_000


# Anthropic takes at most this many cache breakpoints in one request.
MAX_BREAKPOINTS = 4


def marked_prefixes(request: ChatRequest) -> tuple[int, ...]:
    """The first message's stable prefixes (characters) a cache breakpoint goes after,
    shortest first: the rubric's (`cache_prefix_chars`), then the case's
    (`cache_case_chars`), within the breakpoints the tools, the system prompt and the latest
    message leave."""
    taken = bool(request.tools) + bool(request.system) + request.cache_latest
    prefixes = [request.cache_prefix_chars]
    if request.cache_case_chars > request.cache_prefix_chars:
        prefixes.append(request.cache_case_chars)
    return tuple(chars for chars in prefixes if chars > 0)[: max(MAX_BREAKPOINTS - taken, 0)]


def prefix_pieces(text: str, cuts: Iterable[int]) -> list[tuple[str, bool]]:
    """`text` cut after each of `cuts` characters: its non-empty pieces in order, each with
    whether a cache breakpoint ends it (every piece before a cut). Anthropic's adapter sends
    them as blocks; the offline provider simulates the same blocks."""
    pieces, start = [], 0
    for cut in sorted({min(cut, len(text)) for cut in cuts}):
        if cut > start:
            pieces.append((text[start:cut], True))
            start = cut
    if start < len(text):
        pieces.append((text[start:], False))
    return pieces


@dataclass(frozen=True)
class Block:
    text: str
    breakpoint: bool = False


@dataclass(frozen=True)
class PromptUsage:
    input_tokens: int  # the whole prompt
    cached_tokens: int = 0  # read from the cache (part of input_tokens)
    cache_write_tokens: int = 0  # written to the cache (part of input_tokens)


def tokens(characters: int) -> int:
    return characters // CHARS_PER_TOKEN


class PromptCache:
    def __init__(
        self,
        *,
        ttl_seconds: float = TTL_SECONDS,
        min_tokens: int = MIN_TOKENS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.ttl_seconds = ttl_seconds
        self.min_tokens = min_tokens
        self._clock = clock
        self._expires: dict[str, float] = {}  # prefix hash -> when its entry lapses
        self._swept_at = 0
        self._lock = threading.Lock()

    def marked(self, scope: str, blocks: Sequence[Block]) -> PromptUsage:
        """Anthropic's rules (see the module's doc)."""
        ends, breakpoints = _offsets(blocks)
        minimum = self.min_tokens * CHARS_PER_TOKEN
        written = [ends[i] for i in breakpoints if ends[i] >= minimum]
        readable = {
            ends[i]
            for b in breakpoints
            for i in range(max(0, b - LOOKBACK_BLOCKS), b + 1)
            if ends[i] >= minimum
        }
        text = "".join(block.text for block in blocks)
        hashes = dict(_prefix_hashes(scope, text, readable | set(written)))
        with self._lock:
            now = self._clock()
            read = self._longest_live((end, hashes[end]) for end in readable)
            self._keep((hashes[end] for end in [*written, read] if end), now)
        wrote = max(written, default=0) - read if written else 0
        return PromptUsage(tokens(len(text)), tokens(read), tokens(max(wrote, 0)))

    def automatic(self, scope: str, text: str) -> PromptUsage:
        """OpenAI's rules (see the module's doc)."""
        first = self.min_tokens * CHARS_PER_TOKEN
        ends = range(first, len(text) + 1, STEP_TOKENS * CHARS_PER_TOKEN)
        hashes = _prefix_hashes(scope, text, ends)
        with self._lock:
            read = self._longest_live(hashes)
            self._keep((digest for _, digest in hashes), self._clock())
        return PromptUsage(tokens(len(text)), cached_tokens=tokens(read))

    def _longest_live(self, hashes: Iterable[tuple[int, str]]) -> int:
        now = self._clock()
        live = [end for end, digest in hashes if self._expires.get(digest, -1.0) > now]
        return max(live, default=0)

    def _keep(self, digests: Iterable[str], now: float) -> None:
        """Write (or refresh, when read) each entry for another `ttl_seconds`."""
        for digest in digests:
            self._expires[digest] = now + self.ttl_seconds
        if len(self._expires) - self._swept_at >= SWEEP_EVERY:
            live = {key: when for key, when in self._expires.items() if when > now}
            if len(live) > MAX_ENTRIES:
                newest = sorted(live.items(), key=lambda item: item[1])[-MAX_ENTRIES // 2 :]
                live = dict(newest)
            self._expires = live
            self._swept_at = len(self._expires)


def _offsets(blocks: Sequence[Block]) -> tuple[list[int], list[int]]:
    """Where each block ends in the joined text, and the indices of the marked blocks."""
    ends, end = [], 0
    for block in blocks:
        end += len(block.text)
        ends.append(end)
    return ends, [index for index, block in enumerate(blocks) if block.breakpoint]


def _prefix_hashes(scope: str, text: str, ends: Iterable[int]) -> list[tuple[int, str]]:
    """(end, sha256 of scope and text[:end]) for each end, in one pass over the text."""
    digest = hashlib.sha256(f"{scope}\0".encode())
    hashes, start = [], 0
    for end in sorted(set(ends)):
        digest.update(text[start:end].encode())
        hashes.append((end, digest.copy().hexdigest()))
        start = end
    return hashes
