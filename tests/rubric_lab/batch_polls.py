"""The lab's batch tests drive a job's poll by hand (the watch's looks, without a worker)."""

from jobs.models import JobStatus


def polled_until_done(poll, job, *, polls: int):
    """`poll(job)` until the job stops running; fails after `polls` looks."""
    for _ in range(polls):
        poll(job)
        job.refresh_from_db()
        if job.status != JobStatus.RUNNING:
            return job
    raise AssertionError(f"{job} still runs after {polls} polls")
