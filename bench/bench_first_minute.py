"""A newcomer's first minute: seconds from a fresh clone to the demo's login page answering.

The bench clones this repository (the commit checked out here; a local `git clone`, no network)
into a temporary folder, runs the README's demo command there (`bash scripts/demo.sh`, on a
free port, with none of this shell's DATA_DIR, DATABASE_URL or REDIS_URL) and polls the login
page until it answers 200: target SERVE_TARGET (60 s on a quiet 2-core machine). Package
installs may use the machine's pip or uv cache, as a newcomer's second project would. It also
reports, without a target, when the demo's data is built (the command's DATA_READY_LINE; the
demo serves before its data is ready) and stops the demo and its worker.

Run: .venv/bin/python bench/bench_first_minute.py   (one to four minutes)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load import processes  # noqa: E402

TIMEOUT_SECONDS = 1200  # run_all.py's limit for this bench: a busy machine installs slowly
SERVE_TARGET = 60.0
GIVE_UP_AFTER = 900.0
# At a line start: the line that announces the build quotes it.
DATA_READY_LINE = b"\nDemo data ready."
# The site's own settings come from the clone's defaults, as on a newcomer's machine.
UNSET = (
    "DATA_DIR",
    "DATABASE_URL",
    "REDIS_URL",
    "VIRTUAL_ENV",
    "SITE_URL",
    "DJANGO_SETTINGS_MODULE",
)


def clone(into: Path) -> Path:
    """This working copy's checked-out commit, cloned from the local repository."""
    commit = _git("rev-parse", "HEAD")
    target = into / "carejury"
    _git("clone", "--quiet", "--no-checkout", str(REPO_ROOT), str(target))
    _git("-C", str(target), "checkout", "--quiet", commit)
    return target


def _git(*arguments: str) -> str:
    done = subprocess.run(["git", *arguments], cwd=REPO_ROOT, capture_output=True, check=True)
    return done.stdout.decode().strip()


def start_demo(checkout: Path, port: int, log: Path) -> subprocess.Popen:
    environment = {k: v for k, v in os.environ.items() if k not in UNSET}
    with open(log, "ab") as out:
        return subprocess.Popen(
            ["bash", "scripts/demo.sh", "--addr", f"127.0.0.1:{port}"],
            cwd=checkout,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def wait_for(ready, demo: subprocess.Popen, log: Path, started: float) -> float:
    """Seconds from `started` until `ready()`; a demo that exits or never gets there fails."""
    while not ready():
        if demo.poll() is not None:
            raise processes.ServiceError(f"the demo exited:\n{processes.log_tail(log)}")
        if time.monotonic() - started > GIVE_UP_AFTER:
            raise processes.ServiceError(
                f"nothing after {GIVE_UP_AFTER:.0f} s:\n{processes.log_tail(log)}"
            )
        time.sleep(0.2)
    return time.monotonic() - started


def measure(folder: Path) -> tuple[float, float]:
    checkout = clone(folder)
    log = folder / "demo.log"
    port = processes.free_port()
    started = time.monotonic()
    demo = start_demo(checkout, port, log)
    try:
        login = f"http://127.0.0.1:{port}/accounts/login/"
        serving = wait_for(lambda: answers(login), demo, log, started)
        print(f"login page answered 200 after {serving:.1f} s", flush=True)
        built = wait_for(lambda: DATA_READY_LINE in log.read_bytes(), demo, log, started)
        print(f"demo data built after {built:.1f} s", flush=True)
    finally:
        processes.stop(demo, sig=signal.SIGINT)
    return serving, built


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(
        prefix="bench-first-minute-",
        ignore_cleanup_errors=True,  # a stopping worker's cache
    ) as folder:
        serving, built = measure(Path(folder))
    return [
        {
            "name": "fresh clone to the demo's login page answering (scripts/demo.sh)",
            "measured": round(serving, 1),
            "target": SERVE_TARGET,
            "unit": "s",
            "ok": serving < SERVE_TARGET,
            "goal": "<",
        },
        {
            "name": "fresh clone to the demo's data built",
            "measured": round(built, 1),
            "target": None,
            "unit": "s",
            "ok": True,
        },
    ]


if __name__ == "__main__":
    from run_all import report

    sys.exit(report(run()))
