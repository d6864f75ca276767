"""Progress bars for long CLI operations."""

from __future__ import annotations

import time
from collections.abc import Callable

from tqdm import tqdm


def progress_bar(total: int, label: str) -> tqdm:
    return tqdm(total=total, desc=label, unit="item", dynamic_ncols=True)


def wait_until(
    done: Callable[[], int],
    *,
    total: int,
    label: str,
    poll: float = 1.0,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Poll `done()` (a count) until it reaches `total` or `stop()` says so; draws a bar."""
    with progress_bar(total, label) as bar:
        while True:
            count = done()
            bar.update(count - bar.n)
            if count >= total or (stop and stop()):
                return
            time.sleep(poll)


def run_counts(progress: dict) -> str:
    """Every state a run's conversations are in, unfinished ones included."""
    return (
        f"{progress['finished']} finished, {progress['failed']} failed, "
        f"{progress['cancelled']} cancelled, {progress['running']} running, "
        f"{progress['queued']} queued, {progress['pending']} pending"
    )
