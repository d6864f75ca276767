"""Whole runs executed by real worker processes; a worker killed mid-conversation loses nothing."""

import signal
import time

import pytest

from benchmark.models import ConversationStatus
from config import env
from jobs.models import JobStatus
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import enriched_set, launched_run
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


def launch(model: str, size: int = 2, concurrency: int = 4):
    return launched_run(
        enriched_set(name="worker set", size=size, sampler_seed=5),
        name=f"worker run {model}", models=(model,), concurrency=concurrency, use_cache=False,
    )  # fmt: skip


def run_finished(run) -> bool:
    run.refresh_from_db()
    return run.status == JobStatus.FINISHED


def test_a_run_is_executed_by_a_real_worker(tmp_path, transport):
    run = launch("offline/careful", size=3)
    extra = {"DATABASE_URL": test_database_url()}
    if transport:
        extra["REDIS_URL"] = transport
    worker = start_worker(worker_env(tmp_path, **extra))
    try:
        app = client_app(env.celery_transport(transport, tmp_path / "queue"))
        app.send_task("benchmark.run_dispatch", args=[run.pk])
        wait_for(lambda: run_finished(run), timeout=90, what="the run to finish")
    finally:
        stop_worker(worker)
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == 3
    for conversation in run.conversations.all():
        assert conversation.events.count() > 0
        assert conversation.final_state_hash


def test_a_worker_killed_mid_conversation_loses_nothing_else(tmp_path):
    with running_fake_llm_server(delay_seconds=0.4) as server:
        run = launch("openai-compatible/slow-agent", size=2, concurrency=1)
        environment = worker_env(
            tmp_path,
            DATABASE_URL=test_database_url(),
            # Short enough to wait out here, long enough that a busy machine's late heartbeat
            # never makes a live conversation look dead.
            CONVERSATION_LEASE_SECONDS=str(LEASE_SECONDS),
            OPENAI_COMPATIBLE_BASE_URL=server.compatible_base_url,
        )
        app = client_app(env.celery_transport(None, tmp_path / "queue"))
        first = start_worker(environment)
        try:
            app.send_task("benchmark.run_dispatch", args=[run.pk])
            wait_for(
                lambda: run.conversations.filter(status="running").exists(),
                timeout=60,
                what="a conversation to start",
            )
            stop_worker(first, signal.SIGKILL)
        finally:
            stop_worker(first, signal.SIGKILL)
        interrupted = run.conversations.get(status=ConversationStatus.RUNNING)
        assert interrupted.events.count() == 0  # nothing half-written
        second = start_worker(environment)
        try:
            time.sleep(LEASE_SECONDS + 0.5)  # let the dead worker's lease expire
            app.send_task("benchmark.run_dispatch", args=[run.pk])
            wait_for(lambda: run_finished(run), timeout=120, what="the run to finish")
        finally:
            stop_worker(second)
    interrupted.refresh_from_db()
    assert interrupted.status == ConversationStatus.FINISHED
    assert interrupted.attempts == 2
    for conversation in run.conversations.all():
        ids = list(conversation.events.values_list("event_id", flat=True))
        assert len(ids) == len(set(ids)) > 0
        assert (
            conversation.model_calls.filter(purpose="assistant").count()
            == conversation.usage["assistant"]["calls"]
        )


def test_a_worker_killed_on_this_host_has_its_conversation_taken_back_without_its_lease(
    tmp_path,
):
    # The lease is far longer than the test may wait: the next worker on this host knows the
    # killed one is gone and plays its conversation again at once.
    with running_fake_llm_server(delay_seconds=0.4) as server:
        run = launch("openai-compatible/slow-agent", size=2, concurrency=1)
        environment = worker_env(
            tmp_path,
            DATABASE_URL=test_database_url(),
            CONVERSATION_LEASE_SECONDS="3600",
            OPENAI_COMPATIBLE_BASE_URL=server.compatible_base_url,
        )
        app = client_app(env.celery_transport(None, tmp_path / "queue"))
        first = start_worker(environment)
        try:
            app.send_task("benchmark.run_dispatch", args=[run.pk])
            wait_for(
                lambda: run.conversations.filter(status="running").exists(),
                timeout=60,
                what="a conversation to start",
            )
        finally:
            stop_worker(first, signal.SIGKILL)
        interrupted = run.conversations.get(status=ConversationStatus.RUNNING)
        assert interrupted.holder_pid == first.pid
        second = start_worker(environment)  # takes up the run's watch as it connects
        try:
            wait_for(lambda: run_finished(run), timeout=180, what="the run to finish")
        finally:
            stop_worker(second)
    interrupted.refresh_from_db()
    assert (interrupted.status, interrupted.attempts) == (ConversationStatus.FINISHED, 2)
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == 2
