"""The fake model server with the rehearsal's stand-in models, in a process of its own.

Benches that measure the CPU of the platform's processes leave the fake server's out; in a
process of its own it is easy to leave out. `running(latency_seconds)` starts it and yields
its URL; run as a script it prints the URL and serves until stopped.

    .venv/bin/python bench/fake_server.py --latency 0.2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

READY_TIMEOUT = 120  # seconds; a busy 2-core machine starts Python slowly


@contextlib.contextmanager
def running(latency_seconds: float, *batch_options: str) -> Iterator[str]:
    """The server in a child process answering after `latency_seconds`; yields its URL.
    `batch_options`: its batch controls as command-line options (see main)."""
    server = subprocess.Popen(
        [sys.executable, __file__, "--latency", str(latency_seconds), *batch_options],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        url = _first_line(server)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _first_line(server: subprocess.Popen) -> str:
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(server.stdout.readline().strip()))
    reader.start()
    reader.join(READY_TIMEOUT)
    if not found or not found[0].startswith("http"):
        raise RuntimeError(f"the fake model server did not start (exit code {server.poll()})")
    return found[0]


def main(argv: list[str]) -> int:
    from bench import fake_models
    from tests.fakes.llm_server import running_fake_llm_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=fake_models.PROVIDER_SECONDS)
    # The batch APIs' controls (tests/fakes/batch_api.py): batches in progress at their first
    # N looks, and so many of the next batches expiring with only M requests answered.
    parser.add_argument("--batch-polls", type=int, default=0)
    parser.add_argument("--expire-batches", type=int, default=0)
    parser.add_argument("--expired-answered", type=int, default=0)
    options = parser.parse_args(argv)
    fake_models.PROVIDER_SECONDS = options.latency
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    # The benchmarks measure the site: the fake's own checks of each request body against the
    # SDK types (milliseconds per request) stay with the tests.
    fake_options = {"responder": fake_models.respond, "record": False, "check_requests": False}
    with running_fake_llm_server(**fake_options) as fake:
        fake.batches.polls_in_progress = options.batch_polls
        fake.batches.expire_next = options.expire_batches
        fake.batches.expired_answered = options.expired_answered
        print(fake.url, flush=True)
        stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
