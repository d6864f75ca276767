"""The file caches used without Redis: a write does not list the whole folder, the cap holds."""

from config import file_caches
from config.file_caches import SparselyCulledFileCache


def cache_in(folder, max_entries: int) -> SparselyCulledFileCache:
    return SparselyCulledFileCache(str(folder), {"OPTIONS": {"MAX_ENTRIES": max_entries}})


def test_the_folder_is_listed_once_per_so_many_writes_not_on_every_write(tmp_path, monkeypatch):
    cache = cache_in(tmp_path, max_entries=1_000_000)
    listings = []
    original = SparselyCulledFileCache._list_cache_files
    monkeypatch.setattr(
        SparselyCulledFileCache, "_list_cache_files",
        lambda self: listings.append(1) or original(self),
    )  # fmt: skip

    for n in range(2 * file_caches.CULL_CHECK_EVERY):
        cache.set(f"answer-{n}", n)

    assert len(listings) == 2  # the first write, then one per CULL_CHECK_EVERY
    assert cache.get("answer-7") == 7


def test_the_cap_still_holds_within_one_period(tmp_path, monkeypatch):
    monkeypatch.setattr(file_caches, "CULL_CHECK_EVERY", 10)
    cache = cache_in(tmp_path, max_entries=50)

    for n in range(400):
        cache.set(f"answer-{n}", n)

    assert len(cache._list_cache_files()) <= 50 + 10
