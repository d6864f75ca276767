"""Redis stopped mid-run: the site stays up and says so, nothing launched is lost, and the run
finishes by itself once Redis is back.

A real worker plays a run through a real redis-server (queue, result backend and response
cache) with the offline provider slowed down so conversations are in flight. Redis is stopped
under it; the pages answer at once and say the queue is unavailable; a run launched from the
form meanwhile is saved and waits. Redis is started again on the same port, empty (as after a
restart without persistence): the worker reconnects on its own, takes up the watch of every
running job, and both runs finish with every conversation played exactly once.
"""

import time

import pytest
from django.urls import reverse

from benchmark.models import ConversationStatus, Run
from config import env
from jobs.models import JobStatus
from jobs.services import queue
from tests.conftest import make_user
from tests.support.builders import enriched_set, launched_run, shipped_agent
from tests.support.workers import (
    RestartableRedis,
    client_app,
    project_app_sending_to,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

LEASE_SECONDS = 5
UNAVAILABLE = "The task queue (Redis) is unavailable"
HELD = "The task queue is unavailable: the run is saved"


def refreshed(run: Run) -> Run:
    run.refresh_from_db()
    return run


def timed_get(client, url: str):
    started = time.monotonic()
    response = client.get(url)
    return response, time.monotonic() - started


@pytest.mark.django_db
def test_the_health_check_answers_fast_and_is_remembered_for_a_few_seconds(settings, monkeypatch):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    started = time.monotonic()
    assert queue.queue_available() is False
    assert time.monotonic() - started < 2
    pings = []
    monkeypatch.setattr(queue, "_ping", lambda url: pings.append(url) or True)
    assert queue.queue_available() is False  # remembered: no second ping
    assert pings == []


@pytest.mark.django_db
def test_the_embedded_queue_is_always_available(settings):
    settings.REDIS_URL = None
    assert queue.queue_available() is True
    assert queue.held_work_message("the run") is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@pytest.mark.leg("postgres")  # Redis with PostgreSQL, as deployed
def test_a_run_survives_redis_stopping_and_the_site_says_so(tmp_path, settings, client):
    redis_server = RestartableRedis(tmp_path).start()
    benchmark_set = enriched_set(name="outage set", size=2, sampler_seed=5)
    run = launched_run(benchmark_set, name="through the outage", repetitions=2, concurrency=2)
    environment = worker_env(
        tmp_path,
        DATABASE_URL=test_database_url(),
        REDIS_URL=redis_server.url,
        CONVERSATION_LEASE_SECONDS=str(LEASE_SECONDS),
        OFFLINE_LATENCY_MS="150",
    )
    transport = env.celery_transport(redis_server.url, tmp_path / "queue")
    client.force_login(make_user("adam", "admin"))
    worker = start_worker(environment, concurrency=4)
    try:
        client_app(transport).send_task("benchmark.run_dispatch", args=[run.pk])
        wait_for(
            lambda: run.conversations.filter(status=ConversationStatus.RUNNING).exists(),
            timeout=60,
            what="conversations in flight",
        )
        redis_server.stop()
        settings.REDIS_URL = redis_server.url
        with project_app_sending_to(transport):
            late = check_the_site_while_redis_is_down(client, run, benchmark_set)
        redis_server.start()  # same port, empty
        wait_for(
            lambda: all(refreshed(r).status == JobStatus.FINISHED for r in (run, late)),
            timeout=90,
            what="both runs to finish after Redis came back",
        )
    finally:
        stop_worker(worker)
        redis_server.stop()
    log = (tmp_path / "worker.log").read_text()
    assert "Connection to broker lost" in log  # the worker did see Redis go
    for finished in (run, late):
        conversations = list(finished.conversations.all())
        assert {c.status for c in conversations} == {ConversationStatus.FINISHED}
        assert {c.attempts for c in conversations} == {1}  # each played exactly once
        for conversation in conversations:
            ids = list(conversation.events.values_list("event_id", flat=True))
            assert len(ids) == len(set(ids)) > 0
            assert (
                conversation.model_calls.filter(purpose="assistant").count()
                == conversation.usage["assistant"]["calls"]
            )


def check_the_site_while_redis_is_down(client, run: Run, benchmark_set) -> Run:
    """Every page answers quickly and names the problem; a launch is kept. Returns that run."""
    pages = [
        reverse("home"),
        reverse("benchmark:run", args=[run.pk]),
        reverse("benchmark:run_new"),
        reverse("jury:score_run", args=[run.pk]),
    ]
    for url in pages:
        response, seconds = timed_get(client, url)
        assert response.status_code == 200, url
        assert UNAVAILABLE in response.content.decode(), url
        assert seconds < 5, url
    form = {
        "name": "launched during the outage",
        "benchmark_set": benchmark_set.pk,
        "models": "offline/careful",
        "agent_configs": [shipped_agent("baseline").pk],
        "patient_model": "offline/patient",
        "roster_model": "offline/patient",
        "repetitions": 1,
        "concurrency": 2,
        "max_turns": 15,
        "seed": 0,
        "use_cache": "on",
    }
    started = time.monotonic()
    response = client.post(reverse("benchmark:run_new"), form, follow=True)
    assert time.monotonic() - started < 10
    assert response.status_code == 200
    assert HELD in response.content.decode()
    late = Run.objects.get(name=form["name"])
    # Saved and waiting: nothing claimed for a message that never left.
    assert late.status == JobStatus.RUNNING
    assert set(late.conversations.values_list("status", flat=True)) == {ConversationStatus.PENDING}
    response = client.post(reverse("benchmark:run_control", args=[late.pk, "resume"]), follow=True)
    assert response.status_code == 200
    assert HELD in response.content.decode()
    return late
