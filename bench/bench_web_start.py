"""The first request a fresh web process answers, and the calibration trend page warm.

A fresh web process that loads the URL configuration (and the pandas, matplotlib and scipy its
views import) in its first request makes that request take most of a second. The bench builds
the demo's data in a throwaway SQLite database (the demo set, run, jury and clinician studies,
played offline in this process), logs a researcher in, and for each server the project runs
under - gunicorn serving config.wsgi (gthread, one process) and the demo's server (Django's
runserver without reloader or checks, as `manage.py demo --serve` starts it) - starts it,
waits until it says it is serving (gunicorn: its post_worker_init hook, runserver: its
"Starting development server" line), then times the first request of a page for a logged-in
researcher, the home page (FIRST_TARGET, 0.3 s), from the client. Then it times the
calibration trend page of the demo project, first and warm (the median of REPEATS requests
after it; WARM_TARGET, 0.2 s).

Run: .venv/bin/python bench/bench_web_start.py   (about a minute)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402
from bench.load import processes  # noqa: E402

DEMO_CASES = 12
FIRST_TARGET = 0.3
WARM_TARGET = 0.2
REPEATS = 7
READY_LINE = {"gunicorn": b"application loaded", "demo server": b"Starting development server"}
GUNICORN_HOOK = """
def post_worker_init(worker):
    worker.log.info("application loaded")
"""


def build_demo() -> tuple[str, int]:
    """The demo's data, played here with the offline scripts; (a researcher's session key,
    the demo project's id)."""
    from django.test import Client

    from accounts.models import Role, User
    from annotation.models import Project
    from annotation.services.demo import DEMO_PROJECT, annotation_demo_ensure
    from benchmark.services import cases, conversations
    from jury.services import scoring
    from portal.services import demo

    def no_wait(count, total, label) -> None:
        return None

    def enrich(benchmark_set) -> None:
        for entry_id in cases.pending_entry_ids(benchmark_set):
            cases.entry_enrich(entry_id)

    def play(run) -> None:
        for conversation_id in run.conversations.values_list("pk", flat=True):
            conversations.conversation_execute(conversation_id)

    def judge(job) -> None:
        for score_id in scoring.pending_score_ids(job):
            scoring.judge_score_execute(score_id)

    benchmark_set = demo.demo_set_ensure(enrich, no_wait, size=DEMO_CASES)
    run = demo.demo_run_ensure(benchmark_set, play, no_wait)
    annotation_demo_ensure(demo.demo_scoring_ensure(run, judge, no_wait))
    researcher = User.objects.create_user("bench-researcher", role=Role.RESEARCHER)
    client = Client()
    client.force_login(researcher)
    return client.cookies["sessionid"].value, Project.objects.get(name=DEMO_PROJECT).pk


def start(kind: str, port: int, data_dir: Path) -> tuple[subprocess.Popen, Path]:
    log = data_dir / f"{kind.replace(' ', '-')}.log"
    environment = {**os.environ, "DATA_DIR": str(data_dir), "DEBUG": "0"}
    if kind == "gunicorn":
        hook = data_dir / "gunicorn_hook.py"
        hook.write_text(GUNICORN_HOOK, encoding="utf-8")
        command = [
            str(processes.BIN / "gunicorn"), "config.wsgi:application", "-c", str(hook),
            "--bind", f"127.0.0.1:{port}", "--worker-class", "gthread", "--workers", "1",
            "--threads", "4", "--no-control-socket", "--error-logfile", "-",
            "--log-level", "info",
        ]  # fmt: skip
    else:
        command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload",
                   "--skip-checks"]  # fmt: skip
    with open(log, "ab") as out:
        server = subprocess.Popen(
            command, cwd=REPO_ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + processes.READY_TIMEOUT
    while READY_LINE[kind] not in log.read_bytes():
        if server.poll() is not None or time.monotonic() > deadline:
            processes.stop(server)
            raise processes.ServiceError(f"{kind} did not start:\n{processes.log_tail(log)}")
        time.sleep(0.05)
    return server, log


def get(url: str, session: str) -> float:
    request = urllib.request.Request(url, headers={"Cookie": f"sessionid={session}"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        answer.read()
        if answer.status != 200:
            raise RuntimeError(f"GET {url} answered {answer.status}")
    return time.perf_counter() - started


def measure(kind: str, session: str, project: int, data_dir: Path) -> dict:
    port = processes.free_port()
    server, _ = start(kind, port, data_dir)
    try:
        base = f"http://127.0.0.1:{port}"
        first = get(f"{base}/", session)
        trend = f"{base}/alignment/projects/{project}/trend/"
        trend_first = get(trend, session)
        trend_warm = statistics.median(get(trend, session) for _ in range(REPEATS))
    finally:
        processes.stop(server)
    print(
        f"{kind}: first request {first * 1000:.0f} ms; calibration trend first "
        f"{trend_first * 1000:.0f} ms, warm {trend_warm * 1000:.0f} ms"
    )
    return {"first": first, "trend_first": trend_first, "trend_warm": trend_warm}


def run() -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-web-start-") as folder:
        django_on_fresh_sqlite(folder)
        session, project = build_demo()
        from django.db import connections

        connections.close_all()
        for kind in READY_LINE:
            figures = measure(kind, session, project, Path(folder))
            rows += [
                {"name": f"first request of a fresh web process ({kind}), home page",
                 "measured": round(figures["first"], 4), "target": FIRST_TARGET, "unit": "s",
                 "ok": figures["first"] < FIRST_TARGET, "goal": "<"},
                {"name": f"calibration trend page, warm ({kind})",
                 "measured": round(figures["trend_warm"], 4), "target": WARM_TARGET,
                 "unit": "s", "ok": figures["trend_warm"] < WARM_TARGET, "goal": "<"},
            ]  # fmt: skip
    return rows


if __name__ == "__main__":
    from run_all import report

    sys.exit(report(run()))
