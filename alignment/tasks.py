"""Celery tasks of the alignment app: the study archive's jobs, declared the way every app
declares its jobs (jobs.tasks). Thin: the task loads an id and calls the service."""

from functools import partial

from celery import shared_task

from alignment.models import ArchiveJob
from alignment.services.archive import jobs
from jobs.services.queue import queue_send
from jobs.tasks import job_kind


@shared_task(name="alignment.archive_job", acks_late=True)
def archive_job_task(job_id: int) -> None:
    jobs.archive_job_run(job_id)


def archive_job_send(job: ArchiveJob) -> None:
    """Queue the job's task (an unavailable queue loses nothing: the watch sends it again)."""
    queue_send(partial(archive_job_task.delay, job.pk), what=f"archive job {job.pk}")


# Archive jobs hold files as well as work: the watch looks after each until its files are
# deleted (alignment.services.archive.jobs).
job_kind(
    "archive",
    model=ArchiveJob,
    running=jobs.watched_job_ids,
    redispatch=jobs.archive_job_watch,
    start=archive_job_send,
)
