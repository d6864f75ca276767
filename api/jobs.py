"""Sending work to the queue after a launch commits, as the pages do (a broker that is down
leaves the work held, and the answer says so instead of failing)."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from benchmark.models import Run
from benchmark.services.queue import held_work_message, queue_send


def run_dispatch_after_commit(run: Run) -> None:
    from benchmark.tasks import run_dispatch_task

    transaction.on_commit(
        lambda: queue_send(partial(run_dispatch_task.delay, run.pk), what=f"run {run.name!r}")
    )


def held(what: str) -> str:
    """The page's warning when the queue cannot be reached ("" when it can)."""
    return held_work_message(what) or ""
