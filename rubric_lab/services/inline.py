"""Playing a rubric-lab job's units in this process, for the commands' --inline mode.

The same dispatch and execute functions the Celery tasks call, with a thread pool standing in
for the workers: the job's dispatch sends a window (its concurrency, after its cost-limit
check) to the pool instead of the queue, and each finished unit tops the window up, as a unit
task does. This process reports itself as serving the job (worker heartbeats), so the job's
page shows who plays it. Units another process holds (a worker, another command) are waited
for until they end or their lease runs out and they are sent here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from django.db import close_old_connections, connection, models

from jobs.models import JobStatus
from jobs.services.leases import LeasedTask
from jobs.services.worker_heartbeats import reporting

POLL_SECONDS = 1.0


@dataclass(frozen=True)
class LabJobKind:
    """How a command plays one kind of lab job: its units and the functions its tasks call."""

    units_label: str  # "rubric generations", "near-miss pairs", ...
    units: Callable[[models.Model], models.QuerySet]  # every unit, with a `status`
    dispatch: Callable[[models.Model, Callable[[list[LeasedTask]], None]], list[LeasedTask]]
    execute: Callable[[int, str | None], bool]
    start: Callable[[models.Model], None]  # send the first window to the workers, watch it


def job_execute_inline(
    job: models.Model,
    kind: LabJobKind,
    *,
    threads: int,
    on_progress: Callable[[], None] | None = None,
) -> None:
    """Play the job's pending units here until none is left to play or wait for, or the job
    stops running (finished, failed, or paused at its cost limit)."""
    futures: set[Future] = set()
    with (
        reporting(mode="inline", serving=job, concurrency=threads),
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lab-inline") as pool,
    ):

        def send(tasks: list[LeasedTask]) -> None:
            futures.update(pool.submit(_execute, kind.execute, pk, token) for pk, token in tasks)

        while True:
            kind.dispatch(job, send)
            if not futures:
                if not _waiting(job, kind):
                    return
                time.sleep(POLL_SECONDS)  # units held elsewhere: theirs until the lease ends
            else:
                done, _ = wait(futures, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                futures.difference_update(done)
                for future in done:
                    future.result()
            close_old_connections()
            if on_progress is not None:
                on_progress()


def _execute(execute: Callable[[int, str | None], bool], pk: int, token: str) -> None:
    try:
        execute(pk, token)
    finally:
        connection.close()


def _waiting(job: models.Model, kind: LabJobKind) -> bool:
    """Units are pending and the job still runs: someone holds them."""
    running = type(job).objects.filter(pk=job.pk, status=JobStatus.RUNNING).exists()
    return running and kind.units(job).filter(status="pending").exists()
