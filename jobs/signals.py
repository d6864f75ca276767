"""What the job machinery tells the apps above it. Jobs sit below every app that has jobs,
so an app that acts on any job's end (webhooks) listens here instead of importing each one."""

from django.dispatch import Signal

# Sent inside the transaction that ended a job, once, by the call that ended it: `job` (the
# job's row: a run, a scoring job, a rubric lab job, a case set, a study archive job...) and
# `status` ("finished" or "failed"). A job cancelled or paused by a person is not an end here.
job_ended = Signal()


def job_ended_send(job, status: str) -> None:
    """Announce that `job` ended with `status`. A listener's fault is logged by the listener;
    it never undoes or delays the end beyond its own quick writes."""
    job_ended.send(sender=type(job), job=job, status=str(status))


# Sent inside the transaction that records a provider batch's end (jobs.services.batches):
# `batch` (its jobs.models.ProviderBatch row, state ENDED, the provider's word in `detail`:
# completed, expired, failed, cancelled...). Once per batch.
batch_ended = Signal()


def batch_ended_send(batch) -> None:
    """Announce that a provider batch ended; as job_ended, a listener's fault stays its own."""
    batch_ended.send(sender=type(batch), batch=batch)
