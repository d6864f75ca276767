"""Tasks run in real worker processes, through a real Redis broker and the embedded queue."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import Celery

from config import env

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs it)")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    wait_for_redis(url)
    yield url
    server.terminate()
    server.wait(timeout=10)


def wait_for_redis(url: str) -> None:
    import redis

    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis.from_url(url).ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def start_worker(environment: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "2",
            "--loglevel",
            "WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def stop_worker(worker: subprocess.Popen) -> None:
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)


def client_app(transport: dict) -> Celery:
    app = Celery("test-client")
    app.conf.update(
        broker_url=transport["CELERY_BROKER_URL"],
        result_backend=transport["CELERY_RESULT_BACKEND"],
        broker_transport_options=transport["CELERY_BROKER_TRANSPORT_OPTIONS"],
    )
    return app


def worker_env(tmp_path: Path, **extra) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL"}}
    environment.update({"DATA_DIR": str(tmp_path), **extra})
    return environment


def round_trip(app: Celery, worker: subprocess.Popen) -> dict:
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
