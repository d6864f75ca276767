"""A judge task delivered twice never costs a valid score."""

from datetime import timedelta

import pytest
from django.utils import timezone

from benchmark.engine.chat import ProviderError
from jury.models import JudgeScore, ScoreStatus
from jury.services import scoring

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
    monkeypatch.setattr(scoring, "model_router", lambda use_cache: router)
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
