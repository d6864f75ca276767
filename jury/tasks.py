"""Celery tasks: thin wrappers that load ids and call the scoring service."""

from celery import shared_task
from django.db import transaction

from jury.models import ScoringJob
from jury.services import scoring


@shared_task(name="jury.judge_score", acks_late=True)
def judge_score_task(score_id: int) -> None:
    scoring.judge_score_execute(score_id)


def enqueue_pending_scores(job: ScoringJob) -> int:
    """Queue every pending judge task of the job once the caller's transaction commits."""
    score_ids = scoring.pending_score_ids(job)
    transaction.on_commit(lambda: _enqueue(score_ids))
    return len(score_ids)


def _enqueue(score_ids: list[int]) -> None:
    for score_id in score_ids:
        judge_score_task.delay(score_id)
