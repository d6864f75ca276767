"""Real Celery worker processes and a real redis-server for tests."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection

from jobs.services.workers import worker_command, worker_start, worker_stop
from tests.support import worker_forks

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server(directory: Path):
    """Start redis-server on a free port; yields its URL. Skips when the binary is missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (.ci/run installs it)")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for_redis(url)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def _wait_for_redis(url: str) -> None:
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


def test_database_url() -> str:
    """The URL of the database this test uses, so a worker process can share it."""
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings['NAME']}"
    return (
        f"postgres://{settings['USER']}:{settings['PASSWORD']}@{settings['HOST'] or 'localhost'}"
        f":{settings['PORT'] or 5432}/{settings['NAME']}"
    )


test_database_url.__test__ = False  # not a test, despite the name


def worker_env(data_dir: Path, **extra: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL"}}
    environment.update({"DATA_DIR": str(data_dir), **extra})
    return environment


def start_python(arguments: list[str], environment: dict, log_file: Path, error_file=None):
    """`python *arguments` from the project folder, its output appended to `log_file` (its
    errors too, unless `error_file` is given): forked as start_worker's workers are, or a fresh
    interpreter with TEST_WORKER_FORKS=0."""
    forker = worker_forks.forker()
    if forker is not None:
        return forker.start(arguments, environment, log_file, error_file)
    with open(log_file, "ab") as log, open(error_file or log_file, "ab") as errors:
        return subprocess.Popen(
            [sys.executable, *arguments], cwd=ROOT, env=environment, stdout=log,
            stderr=errors, start_new_session=True,
        )  # fmt: skip


def start_worker(environment: dict, concurrency: int = 2):
    """A real worker: forked from the session's warm forker (tests/support/worker_forks.py), or
    a fresh interpreter with TEST_WORKER_FORKS=0. Either has Popen's pid, poll and wait."""
    log_file = Path(environment["DATA_DIR"]) / "worker.log"
    forker = worker_forks.forker()
    if forker is None:
        return worker_start(concurrency=concurrency, log_file=log_file, environment=environment)
    return forker.start(worker_command(concurrency)[1:], environment, log_file)


stop_worker = worker_stop


def fake_provider_env(data_dir: Path, transport: str | None, *, lease_seconds: int, **extra):
    """A worker's environment for a test against the fake server: this test's database, a
    short conversation lease, Redis when `transport` names it, and `extra` (base URLs, keys)."""
    return worker_env(
        data_dir,
        DATABASE_URL=test_database_url(),
        CONVERSATION_LEASE_SECONDS=str(lease_seconds),
        **({"REDIS_URL": transport} if transport else {}),
        **extra,
    )


def killed_then_finished(
    environment: dict, *, send, arm, finished, when: str, between=None, timeout: float = 180
):
    """Start a worker, `send()` it work and SIGKILL it the first time the hook installed by
    `arm(kill)` calls `kill`; then (after `between()`, checks on what the kill left) start a
    second worker and wait until `finished()`. Both workers run one task at a time."""
    first = start_worker(environment, concurrency=1)
    killed = []

    def kill():
        if not killed:
            stop_worker(first, signal.SIGKILL)
            killed.append(True)

    arm(kill)
    try:
        send()
        wait_for(lambda: bool(killed), timeout=timeout, what=f"the worker killed {when}")
    finally:
        stop_worker(first, signal.SIGKILL)
    if between is not None:
        between()
    second = start_worker(environment, concurrency=1)
    try:
        wait_for(finished, timeout=timeout, what="the work to finish after the kill")
    finally:
        stop_worker(second)


def client_app(transport: dict) -> Celery:
    """A Celery client for the given CELERY_* transport settings (see config.env)."""
    # Not the current app: the project's shared tasks must keep sending through its own.
    app = Celery("test-client", set_as_current=False)
    app.conf.update(
        broker_url=transport["CELERY_BROKER_URL"],
        result_backend=transport["CELERY_RESULT_BACKEND"],
        broker_transport_options=transport["CELERY_BROKER_TRANSPORT_OPTIONS"],
    )
    return app


def wait_for(condition, *, timeout: float, interval: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class RestartableRedis:
    """A redis-server on a fixed free port that a test can stop and start again, empty (no
    persistence), as after a restart of a Redis without a disk."""

    def __init__(self, directory: Path):
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("redis-server is not installed (.ci/run installs it)")
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RestartableRedis:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        _wait_for_redis(self.url)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


@contextmanager
def project_app_sending_to(transport: dict):
    """Point the project's own Celery app (what views and services send with) at another
    queue for the duration, e.g. a Redis the test stops and starts."""
    from config.celery import app

    names = {
        "broker_url": "CELERY_BROKER_URL",
        "result_backend": "CELERY_RESULT_BACKEND",
        "broker_transport_options": "CELERY_BROKER_TRANSPORT_OPTIONS",
    }
    saved = {name: app.conf[name] for name in names}
    app.conf.update({name: transport[setting] for name, setting in names.items()})
    _forget_connections(app)
    try:
        yield app
    finally:
        app.conf.update(saved)
        _forget_connections(app)


def _forget_connections(app: Celery) -> None:
    # Celery keeps one connection pool per app, made on first use from the broker settings.
    app._pool = None
    app.amqp._producer_pool = None
