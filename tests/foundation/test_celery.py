"""Tasks run in real worker processes, through a real Redis broker and the embedded queue."""

import os

import pytest

from config import env
from tests.support.workers import client_app, redis_server, start_worker, stop_worker, worker_env


@pytest.fixture
def redis_url(tmp_path):
    yield from redis_server(tmp_path)


def round_trip(app, worker) -> dict:
    try:
        return app.send_task("config.ping", args=[41]).get(timeout=60)
    finally:
        stop_worker(worker)


@pytest.mark.redis
def test_a_task_runs_through_real_redis_and_a_real_worker(tmp_path, redis_url):
    worker = start_worker(worker_env(tmp_path, REDIS_URL=redis_url))
    result = round_trip(client_app(env.celery_transport(redis_url, tmp_path / "q")), worker)
    assert result["value"] == 41
    assert result["worker_pid"] != os.getpid()


def test_a_task_runs_through_the_embedded_queue_and_a_real_worker(tmp_path):
    worker = start_worker(worker_env(tmp_path))
    result = round_trip(client_app(env.celery_transport(None, tmp_path / "queue")), worker)
    assert result["value"] == 41
    assert result["worker_pid"] != os.getpid()
