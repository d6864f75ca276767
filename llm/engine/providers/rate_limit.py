"""Requests-per-minute and tokens-per-minute limits shared by every caller of one model.

Both limiters keep a sliding-window log of reservations (start time, tokens). A caller
reserves one request and an estimate of its tokens before the call, waits while the window
is full, and settles the reservation with the real token count afterwards.
The Redis limiter keeps the log in Redis and decides inside a Lua script, so every worker
on every machine shares one limit; the in-process one shares it between threads.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from llm.engine.providers.catalog import RateLimit


@dataclass(frozen=True)
class Reservation:
    key: str
    handle: Any  # the limiter's own record of the reservation


class RateLimiter(Protocol):
    def acquire(self, key: str, limit: RateLimit, tokens: int) -> Reservation: ...

    def settle(self, reservation: Reservation, tokens: int) -> None: ...


def _clamp(tokens: int, limit: RateLimit) -> int:
    # A call larger than the whole budget could never fit: let it wait for an empty window.
    tokens = max(tokens, 0)
    return min(tokens, limit.tokens_per_minute) if limit.tokens_per_minute else tokens


class InProcessRateLimiter:
    """Thread-safe limiter for one process. `window_seconds` is a minute except in tests."""

    def __init__(
        self,
        *,
        window_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.window_seconds = window_seconds
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._logs: dict[str, deque[list[float]]] = defaultdict(deque)  # [start, tokens]

    def acquire(self, key: str, limit: RateLimit, tokens: int) -> Reservation:
        tokens = _clamp(tokens, limit)
        while True:
            with self._lock:
                wait, entry = self._try_reserve(key, limit, tokens)
            if entry is not None:
                return Reservation(key, entry)
            self._sleep(wait)

    def settle(self, reservation: Reservation, tokens: int) -> None:
        with self._lock:
            reservation.handle[1] = max(tokens, 0)

    def _try_reserve(
        self, key: str, limit: RateLimit, tokens: int
    ) -> tuple[float, list[float] | None]:
        now = self._clock()
        log = self._logs[key]
        # Written as in _wait_seconds so that float rounding cannot both keep an entry and
        # report that it has expired.
        while log and log[0][0] + self.window_seconds - now <= 0:
            log.popleft()
        wait = self._wait_seconds(log, now, limit, tokens)
        if wait > 0:
            return wait, None
        entry = [now, tokens]
        log.append(entry)
        return 0.0, entry

    def _wait_seconds(
        self, log: deque[list[float]], now: float, limit: RateLimit, tokens: int
    ) -> float:
        """How long until the window has room; 0 when it has room now."""
        wait = 0.0
        if limit.requests_per_minute and len(log) >= limit.requests_per_minute:
            # The window has room once enough of the oldest reservations have expired.
            blocking = log[len(log) - limit.requests_per_minute]
            wait = blocking[0] + self.window_seconds - now
        if limit.tokens_per_minute:
            excess = sum(entry[1] for entry in log) + tokens - limit.tokens_per_minute
            for start, used in log:
                if excess <= 0:
                    break
                excess -= used
                wait = max(wait, start + self.window_seconds - now)
        return wait


# The same algorithm as InProcessRateLimiter, run atomically in Redis with Redis's clock.
# KEYS: 1 log (sorted set: reservation id -> start ms), 2 tokens (hash: id -> tokens),
#       3 sequence for reservation ids.
# ARGV: 1 window ms, 2 requests per window (0: none), 3 tokens per window (0: none),
#       4 tokens wanted.
# Returns {1, id} when reserved, {0, milliseconds to wait} when the window is full.
_ACQUIRE_SCRIPT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local window = tonumber(ARGV[1])
local max_requests = tonumber(ARGV[2])
local max_tokens = tonumber(ARGV[3])
local wanted = tonumber(ARGV[4])

for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window)) do
  redis.call('HDEL', KEYS[2], id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)

local entries = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local count = #entries / 2
local wait = 0
if max_requests > 0 and count >= max_requests then
  wait = tonumber(entries[(count - max_requests) * 2 + 2]) + window - now
end
if max_tokens > 0 then
  local used = {}
  local excess = wanted - max_tokens
  for i = 1, #entries, 2 do
    used[i] = tonumber(redis.call('HGET', KEYS[2], entries[i]) or '0')
    excess = excess + used[i]
  end
  local i = 1
  while excess > 0 and i < #entries do
    excess = excess - used[i]
    wait = math.max(wait, tonumber(entries[i + 1]) + window - now)
    i = i + 2
  end
end
if wait > 0 then
  return {0, wait}
end
local id = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[2], id, wanted)
for _, key in ipairs(KEYS) do
  redis.call('PEXPIRE', key, window * 2)
end
return {1, id}
"""

# KEYS: 1 log, 2 tokens. ARGV: 1 reservation id, 2 real tokens. A reservation that has
# already left the window no longer counts, so it is not brought back.
_SETTLE_SCRIPT = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
"""


class RedisRateLimiter:
    """Limiter shared by every process that uses the same Redis and key prefix."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        window_seconds: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        prefix: str = "llm-ratelimit",
    ):
        self.window_ms = max(int(window_seconds * 1000), 1)
        self._sleep = sleep
        self._prefix = prefix
        self._acquire = client.register_script(_ACQUIRE_SCRIPT)
        self._settle = client.register_script(_SETTLE_SCRIPT)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisRateLimiter:
        return cls(redis.Redis.from_url(url), **options)

    def acquire(self, key: str, limit: RateLimit, tokens: int) -> Reservation:
        arguments = [
            self.window_ms,
            limit.requests_per_minute or 0,
            limit.tokens_per_minute or 0,
            _clamp(tokens, limit),
        ]
        while True:
            reserved, value = self._acquire(keys=self._keys(key), args=arguments)
            if reserved:
                return Reservation(key, int(value))
            self._sleep(int(value) / 1000)

    def settle(self, reservation: Reservation, tokens: int) -> None:
        self._settle(
            keys=self._keys(reservation.key)[:2], args=[reservation.handle, max(tokens, 0)]
        )

    def _keys(self, key: str) -> list[str]:
        # The {hash tag} keeps one model's keys in one slot on a Redis cluster.
        base = f"{self._prefix}:{{{key}}}"
        return [f"{base}:log", f"{base}:tokens", f"{base}:seq"]
