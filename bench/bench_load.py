"""Clinicians at work while a benchmark run and a scoring job hammer the same database.

For each database - SQLite (the embedded default, folder queue) and PostgreSQL (a throwaway
database on BENCH_DATABASE_URL's server or the local bench cluster, Redis for the queue when
redis-server is installed; skipped when neither answers) - bench/load/harness.py builds a
scored run and a target study with 8 licensed annotators (both tracks), serves the site with
gunicorn (2 processes x 4 threads) and starts two Celery worker processes. Then, for the window
(each annotator works LOAD_SECONDS, default 75, from their own login):

- a run with 32 conversations in flight and scoring jobs of the played run (16 judge calls in
  flight, the next job starting when one ends) write through the workers, every offline answer
  taking 200 ms;
- locust drives the 8 annotators, each in their own session: open the study, "next item", the
  review page and its heartbeat, an autosave every 2-5 s exactly as review.js sends it,
  submit when complete, on to the next item.

Figures per database: p50 / p95 of every annotator request but login (which hashes the
password on purpose), errors (any answer the page does not expect, a 409 conflict included),
lost autosaves (an acknowledged field the database does not hold afterwards), and the
conversations and judge scores written during the window, so the load is visible. Target:
0 errors, 0 lost, p95 under 300 ms on PostgreSQL. Sizes: LOAD_ANNOTATORS, LOAD_RUN_THREADS,
LOAD_SCORING_CONCURRENCY, LOAD_LATENCY_MS.

Run: .venv/bin/python bench/bench_load.py (about 2.5 minutes per database).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load.processes import postgres_server_url  # noqa: E402

HARNESS = REPO_ROOT / "bench" / "load" / "harness.py"
P95_TARGET_MS = 300
# run_all.py's limit for this bench: two windows of 2.5-4 minutes on a busy 2-core machine.
TIMEOUT_SECONDS = 1200
LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def measure(database: str) -> dict | None:
    """One harness run in its own process (Django is set up once per database); None if it
    crashed (its output says why)."""
    with tempfile.TemporaryDirectory(prefix="bench-load-result-") as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, str(HARNESS), "--database", database, "--out", str(out)]
        finished = subprocess.run(command, cwd=REPO_ROOT)
        if finished.returncode != 0 or not out.exists():
            return None
        return json.loads(out.read_text(encoding="utf-8"))


def print_requests(label: str, result: dict) -> None:
    size = result["size"]
    print(
        f"\n{label} ({result['queue']} queue): {size['annotators']} annotators, "
        f"{size['run_threads']}-thread run, scoring {size['scoring_concurrency']} calls in "
        f"flight, {result['window_seconds']:.0f} s window, load average "
        f"{result['load_average']:.1f} at its end"
    )
    print(f"  {'request':<14} {'count':>6} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for row in result["requests"]:
        print(
            f"  {row['name']:<14} {row['count']:>6} {row['errors']:>6} {row['p50_ms']:>8.0f} "
            f"{row['p95_ms']:>8.0f} {row['max_ms']:>8.0f}"
        )
    print(
        f"  saves acknowledged {result['acknowledged_saves']}, submissions "
        f"{result['submissions']}, lost {result['lost_autosaves']}; conversations written "
        f"{result['conversations']} (failed {result['conversations_failed']}), judge scores "
        f"{result['scores']}; 'database is locked' in server logs: {result['locked_in_logs']}"
    )
    for reason, count in result["error_reasons"].items():
        print(f"  error x{count}: {reason}")


def rows(database: str, result: dict | None) -> list[dict]:
    label = LABELS[database]
    if result is None:
        return [_row(f"load {label}: harness crashed", None, None, "", ok=False)]
    working = next(row for row in result["requests"] if row["name"] == "all but login")
    p95_target = P95_TARGET_MS if database == "postgres" else None
    who = f"{result['size']['annotators']} annotators"
    return [
        _row(f"load {label}: p50 page and save time, {who}", working["p50_ms"], None, "ms"),
        _row(
            f"load {label}: p95 page and save time, {who}",
            working["p95_ms"],
            p95_target,
            "ms",
            goal="<",
        ),  # fmt: skip
        _row(f"load {label}: errors", result["errors"], 0, "", goal="<="),
        _row(f"load {label}: lost autosaves", result["lost_autosaves"], 0, "", goal="<="),
        _row(
            f"load {label}: conversations written in the window",
            result["conversations"],
            1,
            "",
            goal=">=",
        ),  # fmt: skip
        _row(
            f"load {label}: judge scores written in the window", result["scores"], 1, "", goal=">="
        ),  # fmt: skip
    ]


def _row(name: str, measured, target, unit: str, *, goal: str = "", ok: bool | None = None):
    if ok is None:
        ok = target is None or _meets(measured, target, goal)
    row = {"name": name, "measured": measured, "target": target, "unit": unit, "ok": ok}
    return {**row, "goal": goal} if goal else row


def _meets(measured, target, goal: str) -> bool:
    return {"<": measured < target, "<=": measured <= target, ">=": measured >= target}[goal]


def run() -> list[dict]:
    databases = ["sqlite"]
    if postgres_server_url() is not None:
        databases.append("postgres")
    else:
        print("PostgreSQL: no BENCH_DATABASE_URL and no local bench cluster; measured SQLite only")
    results = {database: measure(database) for database in databases}
    for database, result in results.items():
        if result is not None:
            print_requests(LABELS[database], result)
    return [row for database, result in results.items() for row in rows(database, result)]


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
