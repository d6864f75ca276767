"""Judge calls and case enrichment lost with a SIGKILLed worker are sent again by the watch.

A real worker takes a job's work from a real queue (the embedded folder queue and Redis), is
killed with SIGKILL while calls are in flight, and a fresh worker is started. Nobody presses
anything: the new worker takes up the watch of every running job, and once the dead worker's
leases run out its calls are dispatched again. Every row ends in a final state, once.
"""

import signal

import pytest

from benchmark.models import BenchmarkEntry, EntryStatus
from benchmark.services import cases
from config import env
from jobs.models import JobStatus
from jury.models import ScoreStatus
from jury.services import juries, scoring
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import enriched_set, launched_run, played
from tests.support.workers import (
    client_app,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
LEASE_SECONDS = 5
JUDGE_ANSWER = '{"score": 4, "explanation": "Checked availability before booking."}'


def environment_for(tmp_path, transport, server) -> dict:
    extra = {
        "DATABASE_URL": test_database_url(),
        "CONVERSATION_LEASE_SECONDS": str(LEASE_SECONDS),
        "OPENAI_COMPATIBLE_BASE_URL": server.compatible_base_url,
    }
    if transport:
        extra["REDIS_URL"] = transport
    return worker_env(tmp_path, **extra)


def kill_mid_job_then_restart(tmp_path, transport, environment, *, kind, job_id, started, done):
    """Start the job's watch in a worker, SIGKILL it once `started()`, start another worker
    and wait for `done()` without sending anything."""
    app = client_app(env.celery_transport(transport, tmp_path / "queue"))
    first = start_worker(environment)
    try:
        app.send_task("jobs.watch", args=[kind, job_id])
        wait_for(started, timeout=60, what="the first calls to finish")
    finally:
        stop_worker(first, signal.SIGKILL)
    second = start_worker(environment)
    try:
        wait_for(done, timeout=120, what="the job to finish after the crash")
    finally:
        stop_worker(second)


def test_judge_calls_lost_with_a_killed_worker_are_judged_by_the_next_one(tmp_path, transport):
    run = played(launched_run(enriched_set(name="crash set", size=2, sampler_seed=5)))
    jury = juries.jury_create(name="slow judge", judges=["openai-compatible/slow-judge"])
    job = scoring.scoring_launch(run=run, jury=jury, use_cache=False)
    total = job.scores.count()
    with running_fake_llm_server(delay_seconds=0.5, default_text=JUDGE_ANSWER) as server:
        environment = environment_for(tmp_path, transport, server)

        def job_status():
            job.refresh_from_db()
            return job.status

        kill_mid_job_then_restart(
            tmp_path, transport, environment, kind="scoring", job_id=job.pk,
            started=lambda: job.scores.filter(status=ScoreStatus.VALID).exists(),
            done=lambda: job_status() == JobStatus.FINISHED,
        )  # fmt: skip
    assert job.scores.filter(status=ScoreStatus.VALID).count() == total
    assert not job.scores.exclude(lease_token="").exists()
    # Each row was answered once: a call in flight when the worker died is judged again, but
    # no row stores two answers.
    assert all(len(score.attempts) == 1 for score in job.scores.all())
    assert job.conversation_results.filter(complete=True).count() == run.conversations.count()


def test_enrichment_lost_with_a_killed_worker_is_finished_by_the_next_one(tmp_path, transport):
    # The fake server's answers are not patient entries: every entry fails after its repair
    # turns, which is a final state (the set fails with them); what matters is that none stays
    # pending for good.
    benchmark_set = cases.benchmark_set_create(
        name="crash enrichment", distribution=cases.distribution_default_ensure(), size=4,
        sampler_seed=3, generator_model="openai-compatible/slow-writer",
    )  # fmt: skip
    with running_fake_llm_server(delay_seconds=0.3, default_text="Not JSON.") as server:
        environment = environment_for(tmp_path, transport, server)
        entries = BenchmarkEntry.objects.filter(benchmark_set=benchmark_set)

        def set_status():
            benchmark_set.refresh_from_db()
            return benchmark_set.status

        kill_mid_job_then_restart(
            tmp_path, transport, environment, kind="set", job_id=benchmark_set.pk,
            started=lambda: entries.exclude(status=EntryStatus.PENDING).exists(),
            done=lambda: set_status() == JobStatus.FAILED,
        )  # fmt: skip
    assert entries.filter(status=EntryStatus.FAILED).count() == 4
    assert all(entry.attempts == 3 for entry in entries)
    assert not entries.exclude(lease_token="").exists()
