"""Celery tasks of the alignment app: thin wrappers that load an id and call the service."""

from functools import partial

from celery import shared_task

from alignment.services.archive.jobs import archive_job_run
from jobs.services.queue import queue_send


@shared_task(name="alignment.archive_job", acks_late=True)
def archive_job_task(job_id: int) -> None:
    archive_job_run(job_id)


def archive_job_send(*, job_id: int, **_signal) -> None:
    """alignment.services.archive.jobs.job_waiting: queue the job's task (an unavailable queue
    loses nothing: the watch sends it again)."""
    queue_send(partial(archive_job_task.delay, job_id), what=f"archive job {job_id}")
