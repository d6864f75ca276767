"""One load window on one database: clinicians at work while a run and a scoring job write.

    .venv/bin/python bench/load/harness.py --database sqlite --out result.json
    .venv/bin/python bench/load/harness.py --database postgres --seconds 90 --out result.json

`--database` is `sqlite` (a fresh file in a temporary DATA_DIR: the embedded default, with the
folder queue), `postgres` (a new database on BENCH_DATABASE_URL's server, else on the local
bench cluster, dropped afterwards; Redis carries the queue when redis-server is installed), or
the URL of an existing, migrated database to use as it is (the functional test passes its own
test database). Sizes come from the options, whose defaults are the LOAD_* variables.

The window: gunicorn (threads) serves the site, Celery worker processes play a run of
`--run-threads` concurrent conversations and score the played run again and again with the
offline jury (every offline answer takes `--latency-ms`), and locust drives `--annotators`
annotators, each working `--seconds` from their own login. Afterwards the harness writes one
JSON object: request figures per type, errors, lost autosaves, and what the workers wrote
during the window.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.load import processes, verify  # noqa: E402

WEB_THREADS = 4
POLL_SECONDS = 1.0
LOGIN_ALLOWANCE = 60  # seconds: locust's hard stop lies this far past twice the work time
LOCKED = b"database is locked"


def options(argv: list[str]) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="sqlite", help="sqlite, postgres or a URL")
    parser.add_argument("--out", type=Path, required=True, help="where to write the result")
    parser.add_argument("--seconds", type=float, default=float(env.get("LOAD_SECONDS", 75)))
    parser.add_argument("--annotators", type=int, default=int(env.get("LOAD_ANNOTATORS", 8)))
    parser.add_argument("--run-threads", type=int, default=int(env.get("LOAD_RUN_THREADS", 32)))
    parser.add_argument(
        "--scoring-concurrency", type=int, default=int(env.get("LOAD_SCORING_CONCURRENCY", 16))
    )
    parser.add_argument("--latency-ms", type=int, default=int(env.get("LOAD_LATENCY_MS", 200)))
    parser.add_argument("--web-processes", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--worker-processes", type=int, default=2, help="Celery workers")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = options(argv)
    from bench.load.size import LoadSize

    size = LoadSize(
        annotators=args.annotators, run_threads=args.run_threads, seconds=args.seconds,
        scoring_concurrency=args.scoring_concurrency, latency_ms=args.latency_ms,
        web_processes=args.web_processes, worker_processes=args.worker_processes,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder, ExitStack() as stack:
        data_dir = Path(folder)
        engine, url, fresh = stack.enter_context(_database(args.database))
        redis_url = (
            stack.enter_context(processes.redis_server(data_dir))
            if engine == "postgresql"
            else None
        )
        _django(data_dir, url, redis_url, migrate=fresh)
        result = {"database": engine, "queue": "redis" if redis_url else "embedded",
                  "size": asdict(size), **measure(size, data_dir)}  # fmt: skip
        from django.db import connections

        connections.close_all()  # before the throwaway database is dropped
    args.out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return 0


@contextmanager
def _database(choice: str):
    """(engine, DATABASE_URL or None for the default SQLite file, whether it is fresh)."""
    if choice == "sqlite":
        yield "sqlite", None, True
    elif choice == "postgres":
        server = processes.postgres_server_url()
        if server is None:
            raise SystemExit("No PostgreSQL: set BENCH_DATABASE_URL or start the bench cluster.")
        with processes.throwaway_postgres(server) as url:
            yield "postgresql", url, True
    else:
        yield ("sqlite" if choice.startswith("sqlite") else "postgresql"), choice, False


def _django(data_dir: Path, database_url: str | None, redis_url: str | None, *, migrate: bool):
    os.environ.update(DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="config.settings", DEBUG="0")
    for name in ("DATABASE_URL", "REDIS_URL", "APP_ENV", "OFFLINE_LATENCY_MS"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        _say("migrating the throwaway database")
        call_command("migrate", verbosity=0)


STARTED = time.monotonic()


def _say(text: str) -> None:
    print(f"[load {time.monotonic() - STARTED:5.1f} s] {text}", flush=True)


def measure(size, data_dir: Path) -> dict:
    from bench.load import scenario as world

    started = time.monotonic()
    _say(f"building the study, the played run and the load run ({size.study_items} items)")
    scenario = world.scenario_build(size)
    _say(f"built in {time.monotonic() - started:.0f} s; starting gunicorn and the workers")
    with ExitStack() as services:
        port = _serve(services, data_dir, size)
        _say("serving; the window opens")
        window = _window(scenario, size, data_dir, port)
        world.stop_work(scenario)
        _say("window closed; stopping the workers and the site")
    _say("checking every acknowledged autosave against the database")
    return _results(scenario, data_dir, window)


def _serve(services: ExitStack, data_dir: Path, size) -> int:
    """Celery workers and gunicorn, stopped when `services` closes; returns the site's port."""
    from jobs.services.workers import worker_start

    worker_env = {**os.environ, "OFFLINE_LATENCY_MS": str(size.latency_ms)}
    workers = []
    for number in range(size.worker_processes):
        log = data_dir / f"worker-{number}.log"
        worker = worker_start(concurrency=size.worker_threads, log_file=log, environment=worker_env)
        # A cold shutdown: the window is over and its work cancelled, nothing to wait for.
        services.callback(processes.stop, worker, sig=signal.SIGQUIT)
        workers.append((worker, log))
    port = processes.free_port()
    web = processes.gunicorn_start(
        dict(os.environ), port=port, workers=size.web_processes, threads=WEB_THREADS,
        log=data_dir / "gunicorn.log",
    )  # fmt: skip
    services.callback(processes.stop, web)
    for worker, log in workers:
        processes.worker_ready(worker, log)
    return port


def _window(scenario, size, data_dir: Path, port: int) -> dict:
    """Locust for the window while the run and the scoring jobs write; returns what was
    written and how long the window lasted."""
    from tqdm import tqdm

    from bench.load import scenario as world

    plan = _plan(scenario, data_dir, size.seconds)
    world.load_run_start(scenario)
    world.scoring_keep_busy(scenario, size.scoring_concurrency)
    locust = processes.locust_start(
        plan, host=f"http://127.0.0.1:{port}", users=size.annotators,
        seconds=2 * size.seconds + LOGIN_ALLOWANCE, data_dir=data_dir,
    )  # fmt: skip
    started = time.monotonic()
    bar = tqdm(total=int(size.seconds), unit="s", desc="load window", file=sys.stdout)
    try:
        while locust.poll() is None:
            time.sleep(POLL_SECONDS)
            world.scoring_keep_busy(scenario, size.scoring_concurrency)
            bar.n = min(int(time.monotonic() - started), bar.total)
            bar.set_postfix(_progress(scenario, data_dir), refresh=True)
    finally:
        bar.close()
        processes.stop(locust)  # already gone unless this loop failed
    elapsed, load_average = time.monotonic() - started, os.getloadavg()[0]
    if locust.returncode != 0:
        log = processes.log_tail(data_dir / "locust.log")
        raise processes.ServiceError(f"locust exited with {locust.returncode}:\n{log}")
    return {
        "window_seconds": round(elapsed, 1),
        "load_average": load_average,  # the machine's 1-minute load as the window closed
        **world.written(scenario),
    }


def _progress(scenario, data_dir: Path) -> dict:
    from bench.load import scenario as world

    written = world.written(scenario)
    return {
        "requests": processes.log_lines(data_dir / "requests.jsonl"),
        "conversations": written["conversations"],
        "scores": written["scores"],
    }


def _plan(scenario, data_dir: Path, work_seconds: float) -> Path:
    from django.urls import reverse

    study = scenario.study.pk
    plan = {
        "annotators": scenario.logins,
        "work_seconds": work_seconds,
        "urls": {
            "login": reverse("login"),
            "home": reverse("home"),
            "queue": reverse("annotation:queue", args=[study]),
            "next": reverse("annotation:next", args=[study]),
        },
        "request_log": str(data_dir / "requests.jsonl"),
        "save_log": str(data_dir / "saves.jsonl"),
    }
    path = data_dir / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def _results(scenario, data_dir: Path, window: dict) -> dict:
    from bench.load import scenario as world

    requests = _json_lines(data_dir / "requests.jsonl")
    saves = _json_lines(data_dir / "saves.jsonl")
    lost = verify.lost_autosaves(saves, world.stored_annotations(scenario.study))
    logs = [data_dir / "gunicorn.log", *data_dir.glob("worker-*.log")]
    return {
        "requests": [asdict(row) for row in verify.request_stats(requests)],
        "errors": sum(r["error"] is not None for r in requests),
        "error_reasons": dict(verify.error_reasons(requests).most_common(10)),
        "acknowledged_saves": sum(s["kind"] == "ack" and not s["submit"] for s in saves),
        "submissions": sum(s["kind"] == "ack" and s["submit"] for s in saves),
        "lost_autosaves": len(lost),
        "lost_examples": [asdict(item) for item in lost[:5]],
        "locked_in_logs": processes.count_in_logs(logs, LOCKED),
        "scoring_jobs": len(scenario.scoring_jobs),
        **window,
    }


def _json_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
