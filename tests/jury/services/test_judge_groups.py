"""A scoring job sends its judge calls as groups of one conversation's calls, one message per
group, and counts its window in groups (one call of each in flight): a big job's message
carries a whole conversation, a small job's few calls are split to fill the window. A group
runs its calls one after the other, stores each outcome as it ends, merges its conversation
once and tops the window up; it stops at the job's cost limit and never stores a call whose
lease was taken over."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from jobs.models import JobStatus
from jury import tasks
from jury.models import ConversationResult, JudgeScore, ScoreStatus
from jury.services import scoring
from llm.services import prices

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker_queue(monkeypatch):
    sent: list = []
    # Each message the judge tasks send, (first score id, lease token), instead of a queue.
    monkeypatch.setattr(tasks.judge_score_task, "delay", lambda *message: sent.append(message))
    return sent


def started(job, worker_queue, capture):
    with capture(execute=True):
        scoring.scoring_dispatch(job, worker_queue.extend)
    return job


def run_next(worker_queue, capture) -> tuple[int, str]:
    message = worker_queue.pop(0)
    with capture(execute=True):
        tasks.judge_score_task(*message)
    return message


def group_of(token: str) -> list[JudgeScore]:
    return list(JudgeScore.objects.filter(lease_token=token))


def test_each_message_carries_one_conversations_calls_and_the_window_counts_messages(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2)
    started(job, worker_queue, django_capture_on_commit_callbacks)
    assert len(worker_queue) == 2
    for pk, token in worker_queue:
        rows = group_of(token)
        assert len(rows) == 12 and min(row.pk for row in rows) == pk
        assert len({row.conversation_id for row in rows}) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert scoring.scoring_dispatch(job, worker_queue.extend) == []  # both still out


def test_a_small_job_is_split_into_single_calls_to_fill_its_window(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=64)
    started(job, worker_queue, django_capture_on_commit_callbacks)
    assert len(worker_queue) == min(64, job.scores.count())
    assert all(len(group_of(token)) == 1 for _, token in worker_queue)


def test_a_group_stores_every_score_merges_its_conversation_and_sends_the_next(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2)
    started(job, worker_queue, django_capture_on_commit_callbacks)
    pk, token = worker_queue[0]
    conversation_id = JudgeScore.objects.get(pk=pk).conversation_id
    run_next(worker_queue, django_capture_on_commit_callbacks)
    scores = job.scores.filter(conversation_id=conversation_id)
    assert {score.status for score in scores} == {ScoreStatus.VALID}
    assert all(score.calls == 1 and score.lease_token == "" for score in scores)
    assert ConversationResult.objects.get(job=job, conversation_id=conversation_id).complete
    assert len(worker_queue) == 2  # the next conversation took the freed place
    assert JudgeScore.objects.get(pk=worker_queue[-1][0]).conversation_id != conversation_id


def test_a_group_stops_at_the_cost_limit_and_leaves_the_rest_pending_and_free(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks
):
    for judge in offline_jury.judges:
        prices.price_set(model=judge, input_per_million=Decimal("1000"),
                         output_per_million=Decimal("1000"))  # fmt: skip
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=1,
                                 use_cache=False, cost_limit_usd=Decimal("0.01"))  # fmt: skip
    started(job, worker_queue, django_capture_on_commit_callbacks)
    _, token = run_next(worker_queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == JobStatus.PAUSED and "Cost limit reached" in job.stop_reason
    assert job.scores.exclude(status=ScoreStatus.PENDING).count() == 1  # one call spent it all
    assert not job.scores.filter(status=ScoreStatus.PENDING).exclude(claimed_until=None).exists()
    assert worker_queue == []  # a paused job sends nothing


def test_a_call_whose_lease_was_taken_over_is_not_stored_but_its_spend_is(
    played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks, monkeypatch
):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2)
    started(job, worker_queue, django_capture_on_commit_callbacks)
    score_id, _ = worker_queue[0]
    real = scoring.request_json

    def meanwhile_sent_again(recorder, request, *args, **kwargs):
        if (
            request.sample.endswith("/judge:0")
            and not JudgeScore.objects.filter(pk=score_id, lease_token="another worker").exists()
        ):
            # While the first judge answers, its lease runs out and the call is sent again.
            JudgeScore.objects.filter(pk=score_id).update(
                lease_token="another worker", claimed_until=timezone.now() + timedelta(minutes=5)
            )
        return real(recorder, request, *args, **kwargs)

    monkeypatch.setattr(scoring, "request_json", meanwhile_sent_again)
    run_next(worker_queue, django_capture_on_commit_callbacks)
    taken = JudgeScore.objects.get(pk=score_id)
    assert taken.status == ScoreStatus.PENDING and taken.lease_token == "another worker"
    assert not taken.attempts and taken.calls == 1  # the answer was paid for: it is counted
    others = job.scores.filter(conversation_id=taken.conversation_id).exclude(pk=score_id)
    assert {score.status for score in others} == {ScoreStatus.VALID}
