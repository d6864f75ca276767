"""Real Celery workers (and manage.py commands) for tests, forked from one process that has
imported the libraries already.

A worker started with `python -m celery` spends most of its start importing the science stack
(pandas, SciPy, scikit-learn, numba, Matplotlib) and Celery, the same each time: 4.7 s of a 6.2 s
start on a quiet machine, paid twice by every kill-and-restart test. This module runs one "forker"
per test session: a Python process that imports those libraries, never Django's settings or
the project, then forks a process on request. The fork is a new session with the test's
environment, argument list and log, and runs Celery's own command line (or the script, e.g.
manage.py), so the project loads from scratch (settings, apps, tasks) as in a process started
by hand; only third-party modules, which read none of the test's variables, are inherited. The
test gets a handle with Popen's pid, poll, wait, returncode, send_signal and kill; the forker
reaps a child only when asked, as Popen does, so a killed worker stays a zombie until the test
waits for it.

TEST_WORKER_FORKS=0 starts every process with a fresh interpreter instead. A test about what a
process imports as it starts (tests/foundation/test_worker_sdk_import.py), or one that limits
the process before it starts (the full-disk settings test), starts its own.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Third-party packages the worker imports while it starts (python -X importtime), heaviest
# first; none reads the project's environment variables at import.
PRELOADED = (
    "numpy",
    "pandas",
    "scipy.stats",
    "sklearn.metrics",
    "numba",
    "bm25s",
    "pydantic",
    "psutil",
    "kombu",
    "redis",
    "celery",
    "celery.app",
    "celery.bin.celery",
    "celery.worker",
    "celery.concurrency.thread",
    "django.db.models",
    "django.http",
    "django.urls",
    "django.template",
    "django.forms",
    # What the project's modules import besides (python -X importtime after the list above).
    "sklearn.decomposition",
    "sklearn.feature_extraction.text",
    "sklearn.isotonic",
    "jinja2",
    "jsonschema",
    "requests",
    "markdown_it",
    "pyarrow.parquet",
    "kombu.transport.filesystem",
    "kombu.transport.redis",
    # The figures module (common/figures.py) picks the Agg backend before importing these;
    # the forker does the same.
    "matplotlib.axes",
    "matplotlib.figure",
)


class ForkedProcess:
    """What subprocess.Popen offers a test about its process: pid, poll, wait, returncode,
    send_signal and kill."""

    def __init__(self, forker: Forker, pid: int):
        self.forker, self.pid, self.returncode = forker, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.forker.ask({"reap": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["forked process"], timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Forker:
    """The parent's side: one forker process, asked one JSON line at a time."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, __file__], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1,
        )  # fmt: skip
        self.lock = threading.Lock()

    def ask(self, request: dict) -> dict:
        with self.lock:
            self.process.stdin.write(json.dumps(request) + "\n")
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                "the worker forker stopped; TEST_WORKER_FORKS=0 starts workers plainly"
            )
        return json.loads(line)

    def start(
        self,
        arguments: list[str],
        environment: dict,
        log_file: Path,
        error_file: Path | None = None,
    ) -> ForkedProcess:
        """`python *arguments` (`-m module ...` or `script.py ...`, from the project folder)
        in a new session, its output appended to `log_file` (its errors too, unless
        `error_file` is given)."""
        files = {"log": str(log_file), "err": str(error_file or log_file)}
        answer = self.ask({"argv": arguments, "env": environment, **files})
        return ForkedProcess(self, answer["pid"])

    def close(self) -> None:
        """Ends the forker: it exits once its input closes, after its imports, which take
        more than 10 s on a busy machine when the session ends as soon as it began."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_forker: Forker | None = None
_forker_lock = threading.Lock()


def forker() -> Forker | None:
    """The session's forker, started on first use; None when TEST_WORKER_FORKS=0."""
    global _forker
    if os.environ.get("TEST_WORKER_FORKS", "1") == "0":
        return None
    with _forker_lock:
        if _forker is None:
            _forker = Forker()
            atexit.register(_forker.close)
    return _forker


# The forker's side, run as a script: `python tests/support/worker_forks.py`.


def _run_child(request: dict) -> None:
    """In the forked child: become the process the request describes, then exit."""
    import runpy

    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(_opened(request["log"]), 1)
        os.dup2(_opened(request["err"]), 2)
        os.environ.clear()
        os.environ.update(request["env"])
        if os.environ.get("PYTHONUNBUFFERED"):  # read at start-up: the fork's has passed
            sys.stdout.reconfigure(write_through=True)
        arguments = request["argv"]
        if arguments[0] == "-m":
            sys.argv = arguments[1:]
            runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = arguments
            runpy.run_path(arguments[0], run_name="__main__")
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _opened(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


def _reap(pid: int) -> int | None:
    """Popen's returncode for a child: None while it runs, minus the signal that killed it."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -1  # reaped already: it can only be a test that asked twice
    if done == 0:
        return None
    return os.waitstatus_to_exitcode(status)


def _serve() -> None:
    import importlib

    # As `python -m celery` run from the project folder: the project first, never this folder
    # (tests/support holds modules named like libraries, postgres.py for one).
    sys.path[0] = str(ROOT)
    # Without a settings module a library that read Django's settings at import would fail
    # here, loudly, instead of leaving settings made from the forker's environment to every
    # worker.
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)
    importlib.import_module("matplotlib").use("Agg")
    for name in PRELOADED:
        importlib.import_module(name)
    from django.conf import settings

    assert not settings.configured and "config" not in sys.modules, "the project was imported"
    for line in sys.stdin:
        request = json.loads(line)
        if "reap" in request:
            answer = {"returncode": _reap(request["reap"])}
        else:
            # The log exists once the answer is given, as with Popen and an opened file.
            os.close(_opened(request["log"]))
            os.close(_opened(request["err"]))
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                _run_child(request)
            answer = {"pid": pid}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
