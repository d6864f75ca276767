"""Celery tasks of the job machinery, and the one way an app declares a kind of job.

`job_kind` declares a kind: how the watch lists its running jobs and sends one's lost work
again, and how `jobs.services.starts.job_start` sends a job's work. `leased_job_tasks`
declares a job made of leased units (jobs.services.leases) with its unit task too, the form
most kinds take. An app declares its kinds in its own tasks module, which its
`AppConfig.ready()` imports; views, commands and the API call services, never a task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from celery import shared_task
from django.db import models

from jobs.services import batches, starts, watch
from jobs.services.leases import CONNECTION_LOST, LeasedTask
from jobs.services.queue import queue_send

logger = logging.getLogger(__name__)

# --- the watch, for every kind of job ---------------------------------------------------------


@shared_task(name="jobs.watch")
def job_watch_task(kind: str, job_id: int) -> None:
    """Send the job's lost work again, then look again in half a lease while it runs."""
    try:
        still_running = watch.redispatch(kind, job_id)
    except CONNECTION_LOST:
        # The database went away (a restart): look again later rather than end the watch.
        logger.warning("watch of %s %s could not reach the database", kind, job_id)
        still_running = True
    # Run eagerly (tests, --inline) there is no later: the countdown would recurse at once.
    if still_running and not job_watch_task.request.is_eager:
        watch_later(kind, job_id)


def watch_later(kind: str, job_id: int) -> None:
    # Sent to the queue: a watch lost with an unavailable queue is taken up again by every
    # worker that (re)connects to it (config/celery.py). A job waiting on provider batches is
    # looked at sooner: each look is what records their answers.
    waiting = batches.open_batches(kind, job_id).exists()
    countdown = batches.poll_seconds() if waiting else watch.interval_seconds()
    queue_send(
        lambda: job_watch_task.apply_async((kind, job_id), countdown=countdown),
        what=f"the watch of {kind} {job_id}",
    )


def watch_now(kind: str, job_id: int) -> None:
    queue_send(partial(job_watch_task.delay, kind, job_id), what=f"the watch of {kind} {job_id}")


watch.look_later_install(watch_later)
watch.look_now_install(watch_now)


def resume_watches() -> None:
    """Take up every job still running, of every kind, at once (a worker connecting)."""
    for kind, watched in watch.kinds().items():
        for job_id in watched.running():
            queue_send(partial(job_watch_task.delay, kind, job_id), what=f"the watch of {kind}")


# --- declaring a kind of job --------------------------------------------------------------------


# The job model of each declared kind: a record that names its job by kind (a ProviderBatch)
# is turned back into the job's table (webhooks describe a batch's job by it).
JOB_MODELS: dict[str, type[models.Model]] = {}


def job_kind(
    kind: str,
    *,
    model: type[models.Model],
    running: Callable[[], Iterable[int]],
    redispatch: Callable[[int], bool],
    start: Callable[[Any], Any],
) -> None:
    """Declare a kind of job: the watch looks after its running jobs (`running` lists them,
    `redispatch` sends one's lost work, saying whether it still runs) and `job_start` of one
    of its `model` rows calls `start`."""
    watch.register(kind, running=running, redispatch=redispatch)
    starts.start_register(model, start)
    JOB_MODELS[kind] = model


class KnowsItsJob(Protocol):
    """What a unit that read its job reports (jury.services.scoring.JudgeRun), so the top-up
    after it needs no query to find the job."""

    job_id: int | None


@dataclass(frozen=True)
class LeasedJobTasks:
    """A job of leased units: the Celery task of one unit, how to send units, how to start the
    job (first window sent, watch started) and the watch's redispatch."""

    unit_task: Any
    send: Callable[[list[LeasedTask]], None]
    start: Callable[[Any], None]
    redispatch: Callable[[int], bool]


def leased_job_tasks(
    *,
    task_name: str,
    kind: str,
    job_model: type[models.Model],
    running: Callable[[], Iterable[int]],
    execute: Callable[..., Any],
    job_id_of: Callable[[int], int | None],
    dispatch: Callable[..., Any],
    reports_job: bool = False,
) -> LeasedJobTasks:
    """Declare a kind of job made of leased units and make its tasks. A unit's task (named
    `task_name`, stable across releases so queued messages survive an upgrade) executes it,
    then tops up the job's window, so the queue keeps moving without waiting for the watch.

    `execute(pk, token)` runs one unit (or the group of units the message names);
    `dispatch(job, send)` sends a job's free units. With `reports_job`, what `execute` returns
    names the unit's job (KnowsItsJob) when it ran."""

    @shared_task(name=task_name, acks_late=True)
    def unit_task(pk: int, token: str | None = None) -> None:
        outcome = execute(pk, token)
        known: KnowsItsJob | None = outcome if reports_job else None
        job_id = (known and known.job_id) or job_id_of(pk)
        if job_id is not None:
            redispatch(job_id)

    def send(tasks: list[LeasedTask]) -> None:
        for pk, token in tasks:
            unit_task.delay(pk, token)

    def start(job) -> None:
        dispatch(job, send)
        watch.watch_start(kind, job.pk)

    redispatch = watch.redispatcher(job_model, partial(dispatch, send=send))
    job_kind(kind, model=job_model, running=running, redispatch=redispatch, start=start)
    return LeasedJobTasks(unit_task, send, start, redispatch)
