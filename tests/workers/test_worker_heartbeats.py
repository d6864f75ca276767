"""A real worker reports a heartbeat, and the pages say so; once it stops reporting they say
plainly that no worker is, instead of showing the work as running."""

import signal

import pytest
from django.urls import reverse

from jobs.models import WorkerHeartbeat
from tests.support.builders import enriched_set, launched_run
from tests.support.text import squashed
from tests.support.workers import (
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

# Heartbeats of real worker processes, on the production database.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.leg("postgres"),
]


def page_text(client, url) -> str:
    return squashed(client.get(url, HTTP_HX_REQUEST="true"))


def test_the_run_page_shows_a_live_worker_then_says_no_worker_is_reporting(
    tmp_path, admin_client_, settings
):
    run = launched_run(enriched_set(name="heartbeat set", size=1), name="heartbeat run")
    url = reverse("benchmark:run", args=[run.pk]) + "?fragment=progress"
    # The worker takes the run up as it starts (its watch) and is still playing it when it is
    # killed: the page must not go on saying the conversation runs.
    environment = worker_env(
        tmp_path, DATABASE_URL=test_database_url(), WORKER_HEARTBEAT_SECONDS="1",
        OFFLINE_LATENCY_MS="3000",
    )  # fmt: skip
    worker = start_worker(environment)
    try:
        wait_for(
            lambda: "1 reporting: embedded-queue worker" in page_text(admin_client_, url),
            timeout=90,
            what="the run page to show the worker reporting",
        )
        wait_for(
            lambda: run.conversations.filter(status="running").exists(),
            timeout=90,
            what="the worker to start the conversation",
        )
        text = page_text(admin_client_, url)
        assert f"pid {worker.pid}" in text and "Last worker heartbeat" in text
        assert "1 running (last conversation heartbeat" in text
    finally:
        stop_worker(worker, signal.SIGKILL)  # killed: it cannot say it stopped
    settings.WORKER_SILENT_SECONDS = 3
    wait_for(
        lambda: "Not moving: no worker is reporting" in page_text(admin_client_, url),
        timeout=60,
        what="the run page to say no worker is reporting",
    )
    text = page_text(admin_client_, url)
    assert "No worker is reporting</strong> (last seen" in text
    assert "Nothing here moves until a worker runs." in text
    assert "1 marked running (last conversation heartbeat" in text


def test_a_worker_stopped_cleanly_is_marked_stopped(tmp_path):
    environment = worker_env(
        tmp_path, DATABASE_URL=test_database_url(), WORKER_HEARTBEAT_SECONDS="1"
    )
    worker = start_worker(environment)
    try:
        wait_for(
            lambda: WorkerHeartbeat.objects.filter(pid=worker.pid).exists(),
            timeout=90,
            what="the worker's first heartbeat",
        )
    finally:
        stop_worker(worker, signal.SIGTERM)
    beat = WorkerHeartbeat.objects.get(pid=worker.pid)
    assert beat.stopped_at is not None and beat.mode == "embedded"
