"""The tasks of a job made of leased units, the same for every kind of lab job.

Every kind of work is leased (jobs.services.leases) and watched (jobs.services.watch),
so a worker that dies loses nothing: the watch sends the work again with a new token.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from celery import shared_task

from benchmark.tasks import watch_start
from jobs.services import watch
from jobs.services.leases import LeasedTask


@dataclass(frozen=True)
class LeasedJobTasks:
    """A job of leased units: the Celery task of one unit, how to start the job (first window
    sent, watch started) and the watch's redispatch."""

    unit_task: Callable
    start: Callable
    redispatch: Callable[[int], bool]


def leased_job_tasks(
    *,
    task_name: str,
    watch_kind: str,
    job_model,
    execute: Callable[[int, str | None], bool],
    job_id_of: Callable[[int], int | None],
    dispatch: Callable,
) -> LeasedJobTasks:
    """The tasks of one kind of job. A unit's task executes it, then tops up the job's window,
    so the queue keeps moving without waiting for the watch."""

    @shared_task(name=task_name, acks_late=True)
    def unit_task(pk: int, token: str | None = None) -> None:
        execute(pk, token)
        job_id = job_id_of(pk)
        if job_id is not None:
            redispatch(job_id)

    def send(tasks: list[LeasedTask]) -> None:
        for pk, token in tasks:
            unit_task.delay(pk, token)

    def start(job) -> None:
        dispatch(job, send)
        watch_start(watch_kind, job.pk)

    redispatch = watch.redispatcher(job_model, partial(dispatch, send=send))
    return LeasedJobTasks(unit_task, start, redispatch)
