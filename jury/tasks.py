"""Celery tasks: thin wrappers that load ids and call the scoring service."""

from functools import partial

from celery import shared_task

from benchmark.tasks import watch_start
from jobs.services import watch
from jobs.services.leases import LeasedTask
from jury.models import ScoringJob
from jury.services import scoring


@shared_task(name="jury.judge_score", acks_late=True)
def judge_score_task(score_id: int, token: str | None = None) -> None:
    outcome = scoring.judge_score_run(score_id, token, send_next=send_scores)
    if outcome.next_sent:
        return  # the window is topped up; the job's watch sends what was lost
    job_id = outcome.job_id or scoring.job_id_of(score_id)
    if job_id is not None:
        scoring_redispatch(job_id)


def send_scores(tasks: list[LeasedTask]) -> None:
    for score_id, token in tasks:
        judge_score_task.delay(score_id, token)


def scoring_start(job: ScoringJob) -> int:
    """Send the first window of the job's pending judge calls and watch the job; the rest
    follow as calls finish. Returns how many calls are pending."""
    pending = scoring.pending_score_count(job)
    scoring.scoring_dispatch(job, send_scores)
    watch_start("scoring", job.pk)
    return pending


scoring_redispatch = watch.redispatcher(
    ScoringJob, partial(scoring.scoring_dispatch, send=send_scores)
)
