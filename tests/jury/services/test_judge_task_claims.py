"""Judge tasks are leased: a task delivered twice, or lost with its worker, never costs a valid
score, and lost work is sent again."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jury.models import JudgeScore, ScoreStatus
from jury.services import scoring
from llm.engine.chat import ProviderError

pytestmark = pytest.mark.django_db


class ValidStoredMeanwhileThenDown:
    """While this copy waits on the judge, another copy stores a valid score; then we fail."""

    def __init__(self, score_id: int):
        self.score_id = score_id

    def chat(self, request):
        JudgeScore.objects.filter(pk=self.score_id).update(
            status=ScoreStatus.VALID, score=5, explanation="stored by the other copy"
        )
        raise ProviderError("read timed out", kind="timeout")


def a_pending_score(played_run, offline_jury) -> JudgeScore:
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    return job.scores.first()


def test_a_late_failing_copy_does_not_overwrite_a_valid_score(
    played_run, offline_jury, monkeypatch
):
    score = a_pending_score(played_run, offline_jury)
    router = ValidStoredMeanwhileThenDown(score.pk)
    monkeypatch.setattr(scoring, "model_router", lambda use_cache, **prices: router)
    assert scoring.judge_score_execute(score.pk)
    score.refresh_from_db()
    assert (score.status, score.score) == (ScoreStatus.VALID, 5)


def test_a_task_whose_row_another_worker_holds_does_nothing(played_run, offline_jury):
    score = a_pending_score(played_run, offline_jury)
    JudgeScore.objects.filter(pk=score.pk).update(
        claimed_until=timezone.now() + timedelta(minutes=5)
    )
    assert scoring.judge_score_execute(score.pk) is False
    score.refresh_from_db()
    assert score.status == ScoreStatus.PENDING and not score.attempts


def test_an_expired_claim_from_a_dead_worker_is_taken_over(played_run, offline_jury):
    score = a_pending_score(played_run, offline_jury)
    JudgeScore.objects.filter(pk=score.pk).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    assert scoring.judge_score_execute(score.pk)
    score.refresh_from_db()
    assert score.status == ScoreStatus.VALID and score.claimed_until is None


def dispatched(job, django_capture_on_commit_callbacks) -> list:
    sent = []
    with django_capture_on_commit_callbacks(execute=True):
        scoring.scoring_dispatch(job, sent.extend)
    return sent


def test_dispatch_sends_at_most_the_jobs_concurrency(
    played_run, offline_jury, django_capture_on_commit_callbacks
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    job.concurrency = 5
    job.save()
    assert len(dispatched(job, django_capture_on_commit_callbacks)) == 5
    assert dispatched(job, django_capture_on_commit_callbacks) == []  # all five still held


def test_a_call_lost_with_its_worker_is_sent_again_and_the_lost_message_refused(
    played_run, offline_jury, django_capture_on_commit_callbacks
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury)
    job.concurrency = 1
    job.save()
    [(score_id, lost_token)] = dispatched(job, django_capture_on_commit_callbacks)
    # The worker died: its group's lease (every row of the message) runs out.
    JudgeScore.objects.filter(lease_token=lost_token).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    [(again_id, token)] = dispatched(job, django_capture_on_commit_callbacks)
    assert again_id == score_id and token != lost_token
    assert scoring.judge_score_execute(score_id, lost_token) is False
    assert scoring.judge_score_execute(score_id, token)
    assert scoring.judge_score_execute(score_id, token) is False  # a duplicate delivery
    score = JudgeScore.objects.get(pk=score_id)
    assert score.status == ScoreStatus.VALID and len(score.attempts) == 1


def test_an_invalid_row_is_never_judged_again_by_a_late_message(played_run, offline_jury):
    score = a_pending_score(played_run, offline_jury)
    JudgeScore.objects.filter(pk=score.pk).update(status=ScoreStatus.INVALID)
    assert scoring.judge_score_execute(score.pk) is False
