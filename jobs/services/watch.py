"""The watch: every running job, of every kind, sends again the work it lost.

Each kind of job (runs, benchmark sets being enriched, scoring jobs) registers, from its app's
tasks module (jobs.tasks.job_kind), how to list its running jobs and how to re-dispatch one.
The Celery task `jobs.watch` (jobs.tasks) calls `redispatch` once per half lease while the job
runs (`watch_start` begins it, from a service), and every worker
that starts takes up the watch of every running job - so work lost with a dead worker resumes
without anyone pressing a button, whichever queue is in use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction

from jobs.models import JobStatus


@dataclass(frozen=True)
class WatchedKind:
    running: Callable[[], Iterable[int]]  # ids of the jobs still running
    redispatch: Callable[[int], bool]  # recover and send lost work; whether still running


_KINDS: dict[str, WatchedKind] = {}
# Sends the watch's next look at a job, and a look at once (jobs.tasks installs both: this
# module imports no task).
_look_later: Callable[[str, int], None] | None = None
_look_now: Callable[[str, int], None] | None = None


def register(kind: str, *, running: Callable[[], Iterable[int]], redispatch) -> None:
    _KINDS[kind] = WatchedKind(running=running, redispatch=redispatch)


def kinds() -> dict[str, WatchedKind]:
    return dict(_KINDS)


def redispatch(kind: str, job_id: int) -> bool:
    """Send the job's lost work again; False once the job no longer runs (the watch ends)."""
    return _KINDS[kind].redispatch(job_id)


def look_later_install(look_later: Callable[[str, int], None]) -> None:
    global _look_later
    _look_later = look_later


def look_now_install(look_now: Callable[[str, int], None]) -> None:
    global _look_now
    _look_now = look_now


def watch_now(kind: str, job_id: int) -> None:
    """Have a worker look at the job at once (then every interval), once the transaction that
    started it commits: a job whose first look is slow work (a batch job's upload) leaves it
    to the worker rather than to the view or command that launched it."""
    if _look_now is None:
        raise LookupError("The watch has no task to send (jobs.tasks is not loaded).")
    look_now = _look_now
    transaction.on_commit(lambda: look_now(kind, job_id))


def watch_start(kind: str, job_id: int) -> None:
    """Begin the watch of a job once the transaction that started it commits."""
    if _look_later is None:
        raise LookupError("The watch has no task to send (jobs.tasks is not loaded).")
    look_later = _look_later
    transaction.on_commit(lambda: look_later(kind, job_id))


def interval_seconds() -> float:
    # Half a lease: lost work is sent again at most 1.5 leases after its worker died.
    return max(settings.CONVERSATION_LEASE_SECONDS / 2, 1.0)


def redispatcher(
    model: type[models.Model], dispatch: Callable[[Any], Any]
) -> Callable[[int], bool]:
    """A kind's `redispatch` for jobs stored as `model` (with a JobStatus `status`): call
    `dispatch(job)` if the job still exists, then tell whether it still runs."""

    def redispatch(job_id: int) -> bool:
        job = model.objects.filter(pk=job_id).first()
        if job is None:
            return False
        dispatch(job)
        return model.objects.filter(pk=job_id, status=JobStatus.RUNNING).exists()

    return redispatch
