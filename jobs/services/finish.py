"""Finishing a job: the one place every kind of job (runs, scoring jobs, the rubric lab's jobs
and studies, benchmark.models.Job) goes from running to finished or failed.

Each kind knows when it is done and why it failed; this module makes the change the same way
for all: guarded on the job still running, so a job paused, cancelled or finished by another
worker meanwhile stays as it is, and stamped with its end time in the same UPDATE. The call
that ended a job announces it (jobs.signals.job_ended); kinds that end elsewhere (case sets,
study archive jobs) announce it there.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet
from django.utils import timezone

from jobs.models import Job, JobStatus
from jobs.services.leases import any_pending
from jobs.signals import job_ended_send


def job_finish(job: Job, *, reason: str = "") -> bool:
    """Finished, or failed with `reason` when there is one. True when this call ended it."""
    fields = {"status": JobStatus.FAILED if reason else JobStatus.FINISHED}
    if _has_failure_reason(job):
        fields["failure_reason"] = reason
    elif reason:
        raise ValueError(f"A {type(job).__name__} does not fail as a whole: {reason}")
    updated = (
        type(job)
        .objects.filter(pk=job.pk, status=JobStatus.RUNNING)
        .update(**fields, finished_at=timezone.now())
    )
    if updated:
        job_ended_send(job, fields["status"])  # listeners (webhooks) hear of it once
    return bool(updated)


def job_finish_if_done(
    job: Job, *, pending: QuerySet, failure: Callable[[], str] = lambda: ""
) -> bool:
    """End the job once none of `pending` (its pending units) is left: failed when `failure()`
    gives a reason (asked only then), else finished. True when this call ended it."""
    if any_pending(pending):
        return False  # asked after every unit: the index answers, no count of every row
    return job_finish(job, reason=failure())


def _has_failure_reason(job: Job) -> bool:
    return any(field.name == "failure_reason" for field in job._meta.concrete_fields)
