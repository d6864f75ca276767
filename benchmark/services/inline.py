"""Run a benchmark run's conversations in this process, for the CLI's --inline mode.

The same dispatch and execute code the Celery tasks use, with a thread pool standing in for
the workers (each thread is what one worker thread does).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from django.db import close_old_connections, connection

from benchmark.models import Run
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute


def _execute(conversation_id: int) -> None:
    try:
        conversation_execute(conversation_id)
    finally:
        connection.close()


def run_execute_inline(
    run: Run, *, threads: int, on_progress: Callable[[], None] | None = None
) -> None:
    futures: set[Future] = set()
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def enqueue(ids: list[int]) -> None:
            futures.update(pool.submit(_execute, i) for i in ids)

        runs.run_dispatch(run, enqueue)
        while futures:
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            futures.difference_update(done)
            for future in done:
                future.result()
            close_old_connections()
            runs.run_dispatch(run, enqueue)
            if on_progress:
                on_progress()
