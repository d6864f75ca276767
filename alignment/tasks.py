"""Celery tasks of the alignment app: thin wrappers that load an id and call the service."""

from celery import shared_task

from alignment.services.archive.jobs import archive_job_run


@shared_task(name="alignment.archive_job", acks_late=True)
def archive_job_task(job_id: int) -> None:
    archive_job_run(job_id)
