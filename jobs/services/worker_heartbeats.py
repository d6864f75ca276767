"""Worker heartbeats: which processes play queued work, and whether any still does.

Every Celery worker (a worker bootstep in config/celery.py) and every inline command
(`run_benchmark --inline`) writes a WorkerHeartbeat row when it starts and every
WORKER_HEARTBEAT_SECONDS after, from a side thread, and marks it stopped when it stops
cleanly; a killed one just stops reporting. Job pages read `worker_health`: work that waits
while no process serving it has reported for WORKER_SILENT_SECONDS is stalled, and the page
says so instead of showing it as running.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, models
from django.db.models import Q
from django.utils import timezone

from jobs.models import WorkerHeartbeat
from jobs.services.leases import Heartbeat, connection_checked
from jobs.services.processes import ProcessIdentity, this_process

logger = logging.getLogger(__name__)

# Rows of processes silent this long are deleted by the next process that reports; the
# newest row stays while nobody reports, so a page can still say when it was last seen.
PRUNE_AFTER = timedelta(days=1)


def job_key(job: models.Model) -> str:
    """What an inline command serving `job` writes in `serving`, e.g. "benchmark.run:12"."""
    return f"{job._meta.label_lower}:{job.pk}"


class Reporter:
    """Reports this process as a worker until stopped."""

    def __init__(self, *, mode: str, serving: models.Model | None = None, concurrency=None):
        self.identity: ProcessIdentity = this_process()
        self.fields = {
            "mode": mode,
            "serving": job_key(serving) if serving is not None else "",
            "concurrency": concurrency,
        }
        self._heartbeat = Heartbeat(
            self.beat, label="worker heartbeat", interval=settings.WORKER_HEARTBEAT_SECONDS
        )

    def start(self) -> Reporter:
        try:
            self.beat()
        except DatabaseError:  # the database may be down; the thread tries again
            logger.warning("worker heartbeat not written at start")
        self._heartbeat.start()
        return self

    def stop(self) -> None:
        self._heartbeat.stop()
        try:
            connection_checked()
            self._row().update(stopped_at=timezone.now(), last_seen_at=timezone.now())
        except DatabaseError:
            logger.warning("worker heartbeat not marked stopped")

    def beat(self) -> None:
        now = timezone.now()
        WorkerHeartbeat.objects.update_or_create(
            hostname=self.identity.host,
            pid=self.identity.pid,
            process_started_at=self.identity.started_at,
            defaults={**self.fields, "last_seen_at": now, "stopped_at": None},
        )
        WorkerHeartbeat.objects.filter(last_seen_at__lt=now - PRUNE_AFTER).delete()

    def _row(self):
        return WorkerHeartbeat.objects.filter(
            hostname=self.identity.host,
            pid=self.identity.pid,
            process_started_at=self.identity.started_at,
        )


@contextmanager
def reporting(*, mode: str, serving: models.Model | None = None, concurrency=None):
    reporter = Reporter(mode=mode, serving=serving, concurrency=concurrency).start()
    try:
        yield reporter
    finally:
        reporter.stop()


@dataclass(frozen=True)
class WorkerHealth:
    """What the job pages say about the workers (templates/benchmark/_worker_status.html)."""

    waiting: bool  # the page's job has work queued, running or pending
    reporting: list[WorkerHeartbeat]  # processes serving it that reported lately, newest first
    last: WorkerHeartbeat | None  # the newest of every process that could serve it
    queue_mode: str

    @property
    def stalled(self) -> bool:
        """Work waits and no process that could play it is reporting."""
        return self.waiting and not self.reporting


def worker_health(*, waiting: bool, job: models.Model | None = None) -> WorkerHealth:
    """Queue workers of this site's queue serve every job; an inline command serves its own."""
    serving = Q(serving="", mode=settings.QUEUE_MODE)
    if job is not None:
        serving |= Q(serving=job_key(job))
    rows = WorkerHeartbeat.objects.filter(serving).order_by("-last_seen_at")
    since = timezone.now() - timedelta(seconds=settings.WORKER_SILENT_SECONDS)
    return WorkerHealth(
        waiting=waiting,
        reporting=list(rows.filter(last_seen_at__gte=since, stopped_at=None)[:20]),
        last=rows.first(),
        queue_mode=settings.QUEUE_MODE,
    )


def ago(moment: datetime | None) -> str:
    """'12 s ago', '5 min ago', '3 h ago', '2 days ago'."""
    if moment is None:
        return "never"
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


def stalled_message(health: WorkerHealth) -> str:
    """The page's warning as one line, for the CLI."""
    seen = f"last seen {ago(health.last.last_seen_at)}" if health.last else "none has reported yet"
    if health.queue_mode == "embedded":
        how = (
            "start one with `.venv/bin/celery -A config worker --pool threads` in the project "
            "folder (same DATA_DIR), or `manage.py demo`, or pass --inline"
        )
    else:
        how = "start one with the same REDIS_URL and DATABASE_URL, or pass --inline"
    return f"No worker is reporting ({seen}): nothing moves until a worker runs; {how}."
