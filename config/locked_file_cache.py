"""Django's file cache with `add` and `incr` (so `decr`) atomic across processes.

Django's FileBasedCache reads then writes for both (`has_key` then `set`, `get` then `set`):
two web processes counting the same API token at once both read 4 and both write 5. Here
each runs under an exclusive lock on one file of the cache's folder, as Redis runs its own
SET NX and INCR. Reads and plain writes stay unlocked (each write is a rename: never torn).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks

LOCK_FILE = "counts.lock"  # not a cache entry: `clear` and culling leave it alone


class LockedFileBasedCache(FileBasedCache):
    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._createdir()
        with open(os.path.join(self._dir, LOCK_FILE), "ab") as lock:
            locks.lock(lock, locks.LOCK_EX)
            try:
                yield
            finally:
                locks.unlock(lock)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        with self._locked():
            return super().add(key, value, timeout, version)

    def incr(self, key, delta=1, version=None):
        with self._locked():
            return super().incr(key, delta, version)
