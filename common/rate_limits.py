"""Requests per minute counted in a cache every web process shares, atomically.

A count that is read, compared and written back lets concurrent requests in several processes
all read the same number (25 of 40 simultaneous requests got through a limit of 10). Each
request here adds one with the cache's own atomic increment (Redis INCR; the file cache under
a lock, config.file_caches) and is let through only if the number it got back is within
the limit. Counts are kept per fixed window; the previous window's count, weighted by how much
of it the last `window` seconds still cover, is added, so a burst across a window's edge is not
let through twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Taken:
    """One request counted under `key`; `wait` is None when it is within the limit, else the
    seconds to wait before asking again (and the request was not counted)."""

    key: str
    wait: float | None

    @property
    def allowed(self) -> bool:
        return self.wait is None


def rate_take(cache, name: str, *, limit: int, window: int = 60, now: float | None = None) -> Taken:
    """Count one request of `name` against `limit` per `window` seconds."""
    index, elapsed = divmod(time.time() if now is None else now, window)
    key = f"{name}:{int(index)}"
    count = _increment(cache, key, timeout=2 * window)
    wait = _wait(cache.get(f"{name}:{int(index) - 1}", 0), count, limit, window, elapsed)
    if wait is not None:
        cache.decr(key)  # refused: the limit is on requests served, not on requests asked
    return Taken(key, wait)


def rate_full(cache, name: str, *, limit: int, window: int = 60, now: float | None = None):
    """The seconds to wait if one more request of `name` would be refused now (else None),
    counting nothing: for a limit on what some requests turn out to be (refused tokens)."""
    index, elapsed = divmod(time.time() if now is None else now, window)
    count = cache.get(f"{name}:{int(index)}", 0) + 1
    return _wait(cache.get(f"{name}:{int(index) - 1}", 0), count, limit, window, elapsed)


def _wait(previous: int, count: int, limit: int, window: int, elapsed: float) -> float | None:
    if previous * (1 - elapsed / window) + count <= limit:
        return None
    if count > limit:
        return window - elapsed
    # This window alone has room: wait until the previous one weighs little enough.
    return window * (1 - (limit - count) / previous) - elapsed


def _increment(cache, key: str, *, timeout: int) -> int:
    while True:
        cache.add(key, 0, timeout)
        try:
            return cache.incr(key)
        except ValueError:
            continue  # the key expired between the two calls: make it again
