"""Django's file cache, fixed for how the site uses it.

SparselyCulledFileCache: Django's FileBasedCache lists every file of its folder on every write
to decide whether to cull, so a write costs time in proportion to the entries already there.
The model-answer cache keeps every answer (no timeout) and reaches tens of thousands of files
in one study: each new answer took 0.12 s at 21,000 files, most of a judge call's time. Here
the folder is counted once per CULL_CHECK_EVERY writes; the cap still holds within that many.

LockedFileBasedCache: `add` and `incr` (so `decr`) atomic across processes. Django's
FileBasedCache reads then writes for both (`has_key` then `set`, `get` then `set`): two web
processes counting the same API token at once both read 4 and both write 5. Here each runs
under an exclusive lock on one file of the cache's folder, as Redis runs its own SET NX and
INCR. Reads and plain writes stay unlocked (each write is a rename: never torn).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks

LOCK_FILE = "counts.lock"  # not a cache entry: `clear` and culling leave it alone
CULL_CHECK_EVERY = 500  # writes between two counts of the folder


class SparselyCulledFileCache(FileBasedCache):
    _writes = 0

    def _cull(self):
        # Per cache object, so per thread (Django's cache handler): the count is approximate,
        # which a cap of hundreds of thousands of entries can afford.
        if self._writes % CULL_CHECK_EVERY == 0:
            super()._cull()
        self._writes += 1


class LockedFileBasedCache(SparselyCulledFileCache):
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
