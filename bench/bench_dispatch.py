"""Dispatch cost as a job progresses: the step at 90% done must cost what it costs at 0%.

Every finished judge call and every finished conversation dispatches: it locks its job, counts
what is in flight and picks free pending rows to send. A step that read finished rows would
cost more as the job progresses, and the job's total would grow with the square of its size.

For each database - SQLite (a fresh file in a temporary DATA_DIR) and PostgreSQL (a throwaway
database on BENCH_DATABASE_URL's server or the local bench cluster, dropped afterwards, else a
cluster of the bench's own; skipped without server binaries) - the bench stores with
bulk_create, and without any model call, three 12,000-conversation runs (1,200 cases x 10
agents) and three scoring jobs of 2 judges x 6 rubrics over the first (144,000 judge calls
each), all in the same tables. One run and one job
stand at 0% done, one at 50%, one at 90% (rows finished in the order dispatch sends them; a
finished conversation has its 17 model-call rows, a finished judge call its cost, as workers
store them; then VACUUM ANALYZE, as autovacuum would). In each, the window is full but one
place (63 judge calls / 71 conversations in flight, held by a live process). The bench times
`scoring_dispatch` / `run_dispatch` sending that one (then puts it back), the three states in
turn in every round, so a busy moment of a shared machine weighs on all of them alike; median
of REPEATS rounds. Target: the step at 90% costs at most 1.5x the step at 0%; the absolute
times are printed too.

Run: .venv/bin/python bench/bench_dispatch.py   (about 2-4 minutes per database)
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load import processes  # noqa: E402

TIMEOUT_SECONDS = 1800
CASES = 1_200
AGENTS = 10
JUDGES = ("offline/standard", "offline/strict")
SCORING_WINDOW = 64
RUN_WINDOW = 72  # 3 workers x 24 threads, as the rehearsal plays it
CALLS_PER_CONVERSATION = 17
FRACTIONS = (0.0, 0.5, 0.9)
REPEATS = int(os.environ.get("DISPATCH_REPEATS") or 61)
RATIO_TARGET = 1.5
BATCH = 5_000
LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


# --- one database, in its own process -------------------------------------------------------


def django_on(database_url: str | None, data_dir: str) -> None:
    os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DATA_DIR=data_dir, DEBUG="0")
    os.environ.pop("REDIS_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def build() -> tuple[list, list]:
    """One run (conversations pending) and one scoring job (judge calls pending) per fraction:
    all in the same tables, as jobs share them in production."""
    from benchmark.engine.sampler import sample_seeds
    from benchmark.models import BenchmarkEntry, BenchmarkSet, EntryStatus
    from benchmark.services import agents, cases
    from jobs.models import JobStatus
    from jury.services import juries

    distribution = cases.distribution_default_ensure()
    benchmark_set = BenchmarkSet.objects.create(
        name="Dispatch bench", distribution=distribution, sampler_seed=0, size=CASES,
        generator_model="offline/standard", status=JobStatus.FINISHED,
    )  # fmt: skip
    seeds = sample_seeds(cases.distribution_spec(distribution), CASES, 0)
    entries = BenchmarkEntry.objects.bulk_create(
        (
            BenchmarkEntry.from_seed(benchmark_set, seed, status=EntryStatus.READY,
                                     generator_model="offline/standard", profile={}, story="")
            for seed in seeds
        ),
        batch_size=BATCH,
    )  # fmt: skip
    config = agents.agent_configs_ensure_shipped()[0]
    jury = juries.jury_create(name="Dispatch bench jury", judges=list(JUDGES))
    built_runs = [_run(benchmark_set, entries, config, n) for n in range(len(FRACTIONS))]
    jobs = [_scoring_job(built_runs[0], jury) for _ in FRACTIONS]
    return built_runs, jobs


def _run(benchmark_set, entries, config, number: int):
    from benchmark.models import Conversation, Run, RunAgent
    from jobs.models import JobStatus

    run = Run.objects.create(
        name=f"Dispatch bench {number}", benchmark_set=benchmark_set,
        patient_model="offline/patient", patient_prompt_version="bench",
        roster_model="offline/roster", config_hash="bench", status=JobStatus.RUNNING,
        concurrency=RUN_WINDOW,
    )  # fmt: skip
    run_agents = [
        RunAgent.objects.create(run=run, model=f"offline/agent-{n}", agent_config=config,
                                label=f"agent {n}")
        for n in range(AGENTS)
    ]  # fmt: skip
    Conversation.objects.bulk_create(
        (
            Conversation(run=run, run_agent=agent, entry=entry, seed=entry.index)
            for entry in entries
            for agent in run_agents
        ),
        batch_size=BATCH,
    )
    return run


def _scoring_job(run, jury):
    from jobs.models import JobStatus
    from jury.models import JudgeScore, ScoringJob
    from jury.services import rubrics

    versions = rubrics.current_versions(judged_only=True)
    job = ScoringJob.objects.create(
        run=run, jury=jury, status=JobStatus.RUNNING, concurrency=SCORING_WINDOW
    )
    job.rubric_versions.set(versions)
    conversation_ids = list(run.conversations.order_by("pk").values_list("pk", flat=True))
    JudgeScore.objects.bulk_create(
        (
            JudgeScore(job=job, conversation_id=conversation_id, rubric_version=version,
                       judge_index=index, judge_model=judge)
            for conversation_id in conversation_ids
            for version in versions
            for index, judge in enumerate(JUDGES)
        ),
        batch_size=BATCH,
    )  # fmt: skip
    return job


def vacuum_analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in ("jury_judgescore", "benchmark_conversation", "benchmark_modelcall"):
                cursor.execute(f"VACUUM ANALYZE {table}")
        else:
            cursor.execute("ANALYZE")


def scores_progress_to(job, fraction: float) -> None:
    """The first `fraction` of the calls (in the order dispatch sends them) valid, with a
    cost; the next window-1 in flight."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from jury.models import ScoreStatus

    order = list(job.scores.order_by("pk").values_list("pk", flat=True))
    done = round(fraction * len(order))
    for start in range(0, done, BATCH):
        job.scores.filter(pk__in=order[start : min(start + BATCH, done)]).update(
            status=ScoreStatus.VALID, score=3, cost_usd=Decimal("0.001"), calls=1
        )
    held = order[done : done + SCORING_WINDOW - 1]
    job.scores.filter(pk__in=held).update(
        claimed_until=timezone.now() + timedelta(hours=1), lease_token="held"
    )


def conversations_progress_to(run, fraction: float) -> None:
    """The first `fraction` finished (in dispatch order), each with its model-call rows; the
    next window-1 in flight, held by this (live) process."""
    from django.utils import timezone

    from benchmark.models import ConversationStatus, ModelCall
    from jobs.services.processes import holder_fields, this_process

    order = list(
        run.conversations.order_by("entry__index", "run_agent_id", "repetition").values_list(
            "pk", flat=True
        )
    )
    done = round(fraction * len(order))
    for start in range(0, done, BATCH):
        batch = order[start : min(start + BATCH, done)]
        run.conversations.filter(pk__in=batch).update(
            status=ConversationStatus.FINISHED, termination_reason="patient_ended"
        )
        ModelCall.objects.bulk_create(
            (
                ModelCall(purpose="assistant" if n % 2 else "patient", model="offline/agent",
                          run=run, conversation_id=pk, input_tokens=900, output_tokens=60)
                for pk in batch
                for n in range(CALLS_PER_CONVERSATION)
            ),
            batch_size=BATCH,
        )  # fmt: skip
    held = order[done : done + RUN_WINDOW - 1]
    run.conversations.filter(pk__in=held).update(
        status=ConversationStatus.RUNNING, heartbeat_at=timezone.now(),
        **holder_fields(this_process()),
    )  # fmt: skip


def scoring_step(job) -> float:
    """Seconds of one dispatch sending the one free place of the window; then put back."""
    from jury.models import JudgeScore
    from jury.services import scoring

    started = time.perf_counter()
    sent = scoring.scoring_dispatch(job, send=lambda tasks: None)
    seconds = time.perf_counter() - started
    if len(sent) != 1:
        raise RuntimeError(f"the scoring dispatch sent {len(sent)} calls, not 1")
    JudgeScore.objects.filter(pk=sent[0][0]).update(claimed_until=None, lease_token="")
    return seconds


def run_step(run) -> float:
    from benchmark.models import Conversation, ConversationStatus
    from benchmark.services import runs
    from jobs.services.processes import holder_fields

    started = time.perf_counter()
    claimed = runs.run_dispatch(run, lambda ids: None)
    seconds = time.perf_counter() - started
    if len(claimed) != 1:
        raise RuntimeError(f"the run dispatch claimed {len(claimed)} conversations, not 1")
    Conversation.objects.filter(pk=claimed[0]).update(
        status=ConversationStatus.PENDING, **holder_fields(None)
    )
    return seconds


def measure_here(database_url: str | None) -> dict:
    """Median step per fraction, the fractions measured in turn in every round, so a busy
    moment of a shared machine weighs on all of them alike."""
    with tempfile.TemporaryDirectory(prefix="bench-dispatch-") as data_dir:
        django_on(database_url, data_dir)
        from django.db import connections

        try:
            built_runs, jobs = build()
            for fraction, run, job in zip(FRACTIONS, built_runs, jobs, strict=True):
                scores_progress_to(job, fraction)
                conversations_progress_to(run, fraction)
            vacuum_analyze()
            times = {"scoring": [[] for _ in FRACTIONS], "run": [[] for _ in FRACTIONS]}
            for _ in range(REPEATS):
                for n, (run, job) in enumerate(zip(built_runs, jobs, strict=True)):
                    times["scoring"][n].append(scoring_step(job))
                    times["run"][n].append(run_step(run))
            result = {
                kind: {str(f): statistics.median(t) for f, t in zip(FRACTIONS, per, strict=True)}
                for kind, per in times.items()
            }
            for fraction in FRACTIONS:
                print(
                    f"  {fraction:.0%} done: scoring step "
                    f"{result['scoring'][str(fraction)] * 1000:.2f} ms, run step "
                    f"{result['run'][str(fraction)] * 1000:.2f} ms",
                    flush=True,
                )
            return result
        finally:
            connections.close_all()


def main_child(database: str, out: Path) -> int:
    if database == "sqlite":
        out.write_text(json.dumps(measure_here(None)))
        return 0
    with postgres_database() as url:
        out.write_text(json.dumps(measure_here(url)))
    return 0


@contextlib.contextmanager
def postgres_database():
    """A throwaway database on BENCH_DATABASE_URL's server (or the local bench cluster), else
    on a cluster of the bench's own."""
    server = processes.postgres_server_url()
    if server is not None:
        with processes.throwaway_postgres(server, prefix="dispatch") as url:
            yield url
        return
    with (
        tempfile.TemporaryDirectory(prefix="bench-dispatch-pg-") as folder,
        processes.private_postgres(Path(folder)) as found,
    ):
        yield found[0]


# --- the bench -------------------------------------------------------------------------------


def measure(database: str) -> dict | None:
    with tempfile.TemporaryDirectory(prefix="bench-dispatch-result-") as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, __file__, "--database", database, "--out", str(out)]
        print(f"{LABELS[database]}:", flush=True)
        finished = subprocess.run(command, cwd=REPO_ROOT)
        if finished.returncode != 0 or not out.exists():
            return None
        return json.loads(out.read_text())


def rows_for(label: str, result: dict | None) -> list[dict]:
    if result is None:
        return [{"name": f"dispatch on {label}: crashed (see its output)", "measured": None,
                 "target": None, "unit": "", "ok": False}]  # fmt: skip
    rows = []
    for kind, what in (("scoring", "144,000-call scoring job"), ("run", "12,000-conversation run")):
        steps = result[kind]
        first, last = steps["0.0"], steps["0.9"]
        ratio = last / first
        print(
            f"{label}, {what}: dispatch step {first * 1000:.2f} / {steps['0.5'] * 1000:.2f} / "
            f"{last * 1000:.2f} ms at 0% / 50% / 90% done"
        )
        rows.append({
            "name": f"dispatch on {label}, {what}: step at 90% / step at 0% done "
                    f"({first * 1000:.1f} -> {last * 1000:.1f} ms)",
            "measured": round(ratio, 3), "target": RATIO_TARGET, "unit": "x",
            "ok": ratio <= RATIO_TARGET, "goal": "<=",
        })  # fmt: skip
    return rows


def run() -> list[dict]:
    rows = rows_for(LABELS["sqlite"], measure("sqlite"))
    if processes.postgres_server_url() is None and not processes.postgres_binaries():
        print("(PostgreSQL skipped: no server binaries and no BENCH_DATABASE_URL)")
    else:
        rows += rows_for(LABELS["postgres"], measure("postgres"))
    return rows


if __name__ == "__main__":
    if sys.argv[1:2] == ["--database"]:
        sys.exit(main_child(sys.argv[2], Path(sys.argv[4])))
    from run_all import report

    sys.exit(report(run()))
