"""Run a benchmark run's conversations in this process, for the CLI's --inline mode.

The same dispatch and execute code the Celery tasks use, with a thread pool standing in for
the workers (each thread is what one worker thread does). What this process claims is held
in its name (jobs.services.processes), so when it is killed the next inline command on
this host takes its conversations back at once; conversations another live process holds,
or one on another host, are waited for until they end or their lease runs out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from django.db import close_old_connections, connection

from benchmark.models import Run
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute
from jobs.models import JobStatus
from jobs.services.processes import this_process
from jobs.services.worker_heartbeats import reporting

POLL_SECONDS = 1.0


def _execute(conversation_id: int) -> None:
    try:
        conversation_execute(conversation_id)
    finally:
        connection.close()


def run_execute_inline(
    run: Run,
    *,
    threads: int,
    on_progress: Callable[[], None] | None = None,
    on_reclaimed: Callable[[list[runs.Reclaimed]], None] | None = None,
    on_held: Callable[[runs.HeldWork], None] | None = None,
) -> None:
    """Play the run here until nothing is left to play or wait for.

    `on_held` is told, on every poll, what another process holds while this one waits for
    it; it may raise to stop waiting. `on_reclaimed` is told what was taken back from
    stopped processes."""
    me = this_process()
    futures: set[Future] = set()
    with (
        reporting(mode="inline", serving=run, concurrency=threads),
        ThreadPoolExecutor(max_workers=threads) as pool,
    ):

        def enqueue(ids: list[int]) -> None:
            futures.update(pool.submit(_execute, i) for i in ids)

        while True:
            reclaimed = runs.run_reclaim_abandoned(run)
            if reclaimed and on_reclaimed:
                on_reclaimed(reclaimed)
            runs.run_dispatch(run, enqueue, holder=me)
            held = runs.run_held_elsewhere(run, me=me)
            if held is None and not futures:
                return  # finished, or stopped (paused, cancelled, cost limit)
            if held is not None and not futures and not _running(run):
                return  # stopped: what others hold is theirs to finish
            if held is not None and on_held:
                on_held(held)
            _wait_a_little(futures, poll=held is not None)
            close_old_connections()
            if on_progress:
                on_progress()


def _wait_a_little(futures: set[Future], *, poll: bool) -> None:
    """Until one of our conversations ends, or for one poll while others hold some."""
    if not futures:
        time.sleep(POLL_SECONDS)
        return
    timeout = POLL_SECONDS if poll else None
    done, _ = wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
    futures.difference_update(done)
    for future in done:
        future.result()


def _running(run: Run) -> bool:
    return Run.objects.filter(pk=run.pk, status=JobStatus.RUNNING).exists()
