"""What a judge call costs the database, as a worker runs it: one message carries a
conversation's calls; the task takes their rows and reads them once, then per call writes the
answer's accounting row and the score's outcome and spend in one transaction (an answer before
a repair is written before the repair goes out), then merges the conversation and tops up the
window once - under four statements per call, never the conversation's sandboxes, and the
trace read once per conversation however many rubrics and judges score it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jury import tasks
from jury.models import ScoreStatus
from jury.services import scoring
from jury.services.judge_inputs import judge_inputs

pytestmark = pytest.mark.django_db

QUERIES_PER_CALL = 4  # 7 when each call was a message of its own
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


@pytest.fixture
def worker_queue(monkeypatch):
    """The judge tasks' messages, kept here instead of going to the queue."""
    sent: list = []
    # Each message the judge tasks send, (score id, lease token), instead of a queue.
    monkeypatch.setattr(tasks.judge_score_task, "delay", lambda *message: sent.append(message))
    judge_inputs.cache_clear()  # this process has judged nothing yet
    yield sent
    judge_inputs.cache_clear()


def statements(queries: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"] for q in queries.captured_queries if not q["sql"].startswith(TRANSACTION_CONTROL)
    ]


def run_next(worker_queue, capture) -> list[str]:
    """Run the oldest message as a worker would; the statements it made."""
    score_id, token = worker_queue.pop(0)
    with CaptureQueriesContext(connection) as queries, capture(execute=True):
        tasks.judge_score_task(score_id, token)
    return statements(queries)


@pytest.fixture
def job_started(played_run, offline_jury, worker_queue, django_capture_on_commit_callbacks):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=2)
    with django_capture_on_commit_callbacks(execute=True):
        scoring.scoring_dispatch(job, worker_queue.extend)
    return job


def test_a_judge_call_in_a_running_job_takes_under_four_queries(
    job_started, worker_queue, django_capture_on_commit_callbacks
):
    calls = job_started.scores.filter(lease_token=worker_queue[0][1]).count()
    made = run_next(worker_queue, django_capture_on_commit_callbacks)
    assert calls == 12  # the conversation's 6 rubrics x 2 judges in one message
    assert len(made) < QUERIES_PER_CALL * calls, "\n".join(made)
    assert len(worker_queue) == 2  # the window stays full


def test_the_judges_read_no_sandbox_and_each_trace_once(
    job_started, worker_queue, django_capture_on_commit_callbacks
):
    made = []
    while worker_queue:
        made += run_next(worker_queue, django_capture_on_commit_callbacks)
    job_started.refresh_from_db()
    assert not job_started.scores.filter(status=ScoreStatus.PENDING).exists()
    assert job_started.status == "finished"
    assert not [sql for sql in made if "sandbox_initial" in sql or "sandbox_final" in sql]
    trace_reads = [sql for sql in made if 'FROM "benchmark_traceevent"' in sql]
    assert len(trace_reads) == job_started.run.conversations.scorable().count()
