"""Start and stop local Celery worker processes (the demo's worker, and the tests')."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def worker_command(concurrency: int | None = None) -> list[str]:
    """The command line of a thread-pool worker: conversations wait on model latency, so threads
    are the right pool."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--pool",
        "threads",
        "--concurrency",
        str(concurrency or settings.CELERY_WORKER_CONCURRENCY),
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
    ]


def worker_start(
    *,
    concurrency: int | None = None,
    log_file: Path | None = None,
    environment: dict | None = None,
) -> subprocess.Popen:
    """A worker process in a session of its own, writing to `log_file`."""
    log_file = log_file or Path(settings.DATA_DIR) / "worker.log"
    with open(log_file, "ab") as log:
        return subprocess.Popen(
            worker_command(concurrency),
            cwd=ROOT,
            env=dict(os.environ if environment is None else environment),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def worker_stop(worker: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop the worker's whole process group; SIGKILL if it does not stop within 20 s."""
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, sig)
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=20)
