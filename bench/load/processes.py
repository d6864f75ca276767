"""The real services of a load window, each its own process group: redis-server, a throwaway
PostgreSQL database, gunicorn with threads, and locust headless (no Django imports: Celery
workers are started with jobs.services.workers by the harness)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
LOCAL_POSTGRES = "postgres://bench:bench@127.0.0.1:5432/bench"
READY_TIMEOUT = 120  # seconds; a busy 2-core machine starts Python processes slowly


class ServiceError(RuntimeError):
    """A service did not start; the message names it and where its log is."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(command: list[str], *, log: Path, env: dict | None = None) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def stop(process: subprocess.Popen, *, sig: int = signal.SIGTERM, grace: float = 20) -> None:
    """Signal the process group; SIGKILL what is left after `grace` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, sig)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)


def _wait_until(ready, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready():
        if process.poll() is not None:
            raise ServiceError(f"{what} exited with code {process.returncode}:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} not ready after {READY_TIMEOUT} s:\n{log_tail(log)}")
        time.sleep(0.2)


def log_tail(log: Path, lines: int = 15) -> str:
    """The end of a service's log: the temporary folder holding it is gone by the time
    anyone reads the error."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


# --- redis -----------------------------------------------------------------------------------


@contextmanager
def redis_server(directory: Path) -> Iterator[str | None]:
    """A private redis-server on a free port, yielding its URL; None when it is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port, log = free_port(), directory / "redis.log"
    command = [binary, "--port", str(port), "--save", "", "--appendonly", "no",
               "--dir", str(directory)]  # fmt: skip
    server = _start(command, log=log)
    try:
        _wait_until(lambda: _answers_ping(port), server, "redis-server", log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(server)


def redis_pid(url: str) -> int:
    """The pid of the redis-server listening on `url`'s port."""
    import psutil

    port = str(urlparse(url).port)
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if process.info["name"] == "redis-server" and (
            port in cmdline or any(part.endswith(f":{port}") for part in cmdline)
        ):
            return process.pid
    raise ServiceError(f"no redis-server process listens on port {port}")


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


# --- PostgreSQL ------------------------------------------------------------------------------


def postgres_server_url() -> str | None:
    """BENCH_DATABASE_URL, else the local bench cluster when it answers; None without either."""
    url = os.environ.get("BENCH_DATABASE_URL", "").strip()
    if url:
        return url
    import psycopg

    try:
        psycopg.connect(LOCAL_POSTGRES, connect_timeout=2).close()
    except psycopg.OperationalError:
        return None
    return LOCAL_POSTGRES


@contextmanager
def throwaway_postgres(server_url: str, prefix: str = "load") -> Iterator[str]:
    """A new, empty database on the server of `server_url` (its role needs CREATEDB), dropped
    afterwards; yields its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunparse(urlparse(server_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_binaries() -> Path | None:
    """The newest installed PostgreSQL server's bin folder, if one can be run from here (as
    root: through runuser as the postgres user)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]))
    if not found or (os.geteuid() == 0 and shutil.which("runuser") is None):
        return None
    return found[-1].parent


@contextmanager
def private_postgres(directory: Path) -> Iterator[tuple[str, int] | None]:
    """A PostgreSQL cluster of its own (initdb in `directory`, a free port), so a bench can
    count every CPU second the database spends; yields (URL of its database, postmaster pid),
    or None when the server binaries are missing. As root the server runs as the `postgres`
    user (PostgreSQL refuses root). pg_stat_statements is loaded: the bench reads how many
    statements the work made."""
    bin_dir = postgres_binaries()
    if bin_dir is None:
        yield None
        return
    home = Path(directory) / "postgres"
    home.mkdir()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(directory, user="postgres")
        shutil.chown(home, user="postgres")
    port, data = free_port(), home / "data"

    def run(*command: str) -> None:
        subprocess.run([*as_postgres, *command], check=True, capture_output=True, timeout=180)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "bench", "--auth=trust", "-E", "UTF8")
    options = (f"-p {port} -c listen_addresses=127.0.0.1 -k {home} -c max_connections=200 "
               "-c shared_preload_libraries=pg_stat_statements")  # fmt: skip
    run(str(bin_dir / "pg_ctl"), "start", "-D", str(data), "-l", str(home / "server.log"),
        "-o", options, "-w", "-t", "120")  # fmt: skip
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "bench", "bench")
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
        yield f"postgres://bench@127.0.0.1:{port}/bench", postmaster
    finally:
        run(str(bin_dir / "pg_ctl"), "stop", "-D", str(data), "-m", "fast", "-w", "-t", "120")


# --- CPU and memory ---------------------------------------------------------------------------


def peak_memory_mb(pid: int) -> float:
    """The process's high-water mark of resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU the processes and all their descendants spent so far, those that
    ended and were waited for included (a PostgreSQL backend per connection, say)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in tree:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue  # ended since it was listed: its time is now its parent's
            total += times.user + times.system + times.children_user + times.children_system
    return total


# --- gunicorn --------------------------------------------------------------------------------


def gunicorn_start(
    env: dict, *, port: int, workers: int, threads: int, log: Path
) -> subprocess.Popen:
    """The site behind a real threaded WSGI server; returns once it answers the login page."""
    command = [
        str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
        "--timeout", "120", "--graceful-timeout", "5", "--error-logfile", "-",
        "--no-control-socket",  # its default lives in $HOME, shared by every instance
        # As production starts it (deploy/entrypoint.sh): the code imported once, before the
        # processes fork, instead of by each of them at once on a busy machine.
        "--preload",
    ]  # fmt: skip
    server = _start(command, log=log, env=env)
    try:
        _wait_until(lambda: _answers(f"http://127.0.0.1:{port}/accounts/login/"), server,
                    "gunicorn", log)  # fmt: skip
    except ServiceError:
        stop(server)
        raise
    return server


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status == 200
    except (OSError, urllib.error.URLError):
        return False


def worker_ready(worker: subprocess.Popen, log: Path) -> None:
    """Wait for the Celery worker's "ready." line in its log."""
    _wait_until(lambda: b" ready." in log.read_bytes(), worker, "celery worker", log)


# --- locust ----------------------------------------------------------------------------------


def locust_start(
    plan: Path, *, host: str, users: int, seconds: float, data_dir: Path
) -> subprocess.Popen:
    """Locust headless: `users` annotators, one more each second (people do not all log in at
    the same moment), who leave once their work time is over; `seconds` is only the hard stop,
    at which each still finishes the step it is in (stop timeout), so no acknowledgement is
    cut off."""
    command = [
        str(BIN / "locust"), "-f", str(LOCUSTFILE), "--headless", "--host", host,
        "--users", str(users), "--spawn-rate", "1", "--run-time", f"{int(seconds)}s",
        "--stop-timeout", "30", "--only-summary", "--loglevel", "WARNING",
        "--exit-code-on-error", "0",
    ]  # fmt: skip
    env = {**os.environ, "LOAD_PLAN": str(plan)}
    return _start(command, log=data_dir / "locust.log", env=env)


def log_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def count_in_logs(paths: list[Path], needle: bytes) -> int:
    return sum(path.read_bytes().count(needle) for path in paths if path.exists())
