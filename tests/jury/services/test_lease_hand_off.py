"""A finished judge call hands its place in the window to the job's next never-sent call, in
the transaction that stores its outcome - never for a job that stopped, never twice, and never
from a call that no longer held its row."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from jobs.models import JobStatus
from jury import tasks
from jury.models import JudgeScore, ScoreStatus, ScoringJob
from jury.services import scoring
from llm.services import prices

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker_queue(monkeypatch):
    sent: list = []
    # Each message the judge tasks send, (score id, lease token), instead of a queue.
    monkeypatch.setattr(tasks.judge_score_task, "delay", lambda *message: sent.append(message))
    return sent


@pytest.fixture
def job_started(played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2)
    with django_capture_on_commit_callbacks(execute=True):
        scoring.scoring_dispatch(job, worker_queue.extend)
    return job


def run_next(worker_queue, capture) -> tuple[int, str]:
    message = worker_queue.pop(0)
    with capture(execute=True):
        tasks.judge_score_task(*message)
    return message


def held(job) -> set[int]:
    return set(job.scores.filter(claimed_until__gt=timezone.now()).values_list("pk", flat=True))


def test_the_next_call_sent_is_the_first_never_sent_and_holds_its_lease(
    job_started, worker_queue, django_capture_on_commit_callbacks
):
    first_two = {pk for pk, _ in worker_queue}
    done, _ = run_next(worker_queue, django_capture_on_commit_callbacks)
    [(handed, token)] = [message for message in worker_queue if message[0] not in first_two]
    never_sent = job_started.scores.exclude(pk__in=first_two).order_by("pk").first()
    assert handed == never_sent.pk
    assert JudgeScore.objects.get(pk=handed).lease_token == token
    assert held(job_started) == {pk for pk, _ in worker_queue}
    assert JudgeScore.objects.get(pk=done).status == ScoreStatus.VALID


def test_a_paused_job_hands_nothing_on(
    job_started, worker_queue, django_capture_on_commit_callbacks
):
    ScoringJob.objects.filter(pk=job_started.pk).update(status=JobStatus.PAUSED)
    run_next(worker_queue, django_capture_on_commit_callbacks)
    assert len(worker_queue) == 1  # only the call that was already out


def test_a_job_at_its_cost_limit_hands_nothing_on_and_is_paused(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks
):
    for judge in offline_jury.judges:
        prices.price_set(model=judge, input_per_million=Decimal("1000"),
                         output_per_million=Decimal("1000"))  # fmt: skip
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2,
                                 use_cache=False, cost_limit_usd=Decimal("0.01"))  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        scoring.scoring_dispatch(job, worker_queue.extend)
    run_next(worker_queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == JobStatus.PAUSED and "Cost limit reached" in job.stop_reason
    assert len(worker_queue) == 1


def test_a_call_whose_lease_was_taken_over_stores_nothing_and_hands_nothing_on(
    job_started, worker_queue, django_capture_on_commit_callbacks, monkeypatch
):
    score_id, token = worker_queue[0]
    real = scoring.request_json

    def meanwhile_sent_again(*args, **kwargs):
        # While the judge answers, the lease runs out and the watch sends the call again.
        JudgeScore.objects.filter(pk=score_id).update(
            lease_token="another worker", claimed_until=timezone.now() + timedelta(minutes=5)
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(scoring, "request_json", meanwhile_sent_again)
    run_next(worker_queue, django_capture_on_commit_callbacks)
    score = JudgeScore.objects.get(pk=score_id)
    assert score.status == ScoreStatus.PENDING and score.lease_token == "another worker"
    assert not score.attempts
    assert len(worker_queue) == 1  # the other call that was out; nothing handed on
