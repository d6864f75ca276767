"""Start a local Celery worker process: the embedded default's way to keep work off requests."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def worker_start(
    *, concurrency: int | None = None, log_file: Path | None = None
) -> subprocess.Popen:
    """A thread-pool worker: conversations wait on model latency, so threads are the right pool."""
    log_file = log_file or Path(settings.DATA_DIR) / "worker.log"
    command = [
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
    with open(log_file, "ab") as log:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def worker_stop(worker: subprocess.Popen) -> None:
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
