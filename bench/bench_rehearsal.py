"""Paper-scale rehearsal: the paper's whole run through Redis, PostgreSQL and several workers.

10 agents (5 stand-in models x 2 agent configurations) x 1,200 cases = 12,000 conversations,
then a jury of 2 judges x 6 rubrics = 144,000 judge calls, exactly as production would run them:
the benchmark set is enriched, the run played and the job scored by WORKERS real Celery worker
processes (THREADS threads each, fewer if PostgreSQL's max_connections cannot serve them all:
every worker thread holds a connection while it works) taking their tasks from a private
redis-server and writing to a fresh PostgreSQL database. Every model call goes through the real
SDKs (OpenAI-compatible for the agents and the patient, OpenAI-compatible and Anthropic for the
two judges) to the local fake server, which answers after 200 ms with the stand-in models of
bench/fake_models.py; only the rosters come from the offline script. Nothing is cached.

Reported: wall time and throughput of the run (conversations/s) and of the scoring job (judge
calls/s), in total and per worker process; the database size afterwards; each worker process's
peak resident memory; and, on the result, the server time of the jury report page and of an
annotator's review page in a target study drawn from the job (medians through the Django test
client, after a warm-up).

Needs redis-server and a PostgreSQL server where BENCH_DATABASE_URL (default: the local bench
cluster, postgres://bench:bench@127.0.0.1:5432/bench) may create databases: the rehearsal
creates its own database and drops it at the end (bench/load/processes.py, shared with the
load bench). REHEARSAL_SCALE=0.1 plays a
tenth of the cases for a quick look; REHEARSAL_WORKERS sets the number of worker processes.

Run: .venv/bin/python bench/bench_rehearsal.py   (about an hour at full scale on 2 cores)
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load import processes  # noqa: E402

# Read by bench/run_all.py: the full rehearsal takes far longer than the other benches.
TIMEOUT_SECONDS = 14_400  # 4 hours
SCALE = float(os.environ.get("REHEARSAL_SCALE") or 1)
CASES = max(2, round(1_200 * SCALE))
AGENT_MODELS = tuple(f"openai-compatible/rehearsal-model-{n}" for n in range(1, 6))
AGENT_CONFIGS = ("baseline", "clinically_grounded")
PATIENT_MODEL = "openai-compatible/rehearsal-patient"
ROSTER_MODEL = "offline/roster"
JUDGES = ("openai-compatible/rehearsal-judge", "anthropic/rehearsal-judge")
WORKERS = int(os.environ.get("REHEARSAL_WORKERS") or 3)
THREADS = int(os.environ.get("REHEARSAL_THREADS") or 24)
# Every worker thread holds its own PostgreSQL connection while it works: the workers may use
# the server's max_connections less those already open and this many for everyone else.
CONNECTION_HEADROOM = 10
STUDY_ITEMS = 300
REPEATS = 5
# Server time of the pages on the result (median, seconds).
PAGE_TARGETS = {"report": 2.0, "review": 0.100}
POLL_SECONDS = 2.0


# --- services -----------------------------------------------------------------------------------


@contextlib.contextmanager
def services(folder: Path):
    """A private redis-server and a fresh PostgreSQL database (dropped afterwards): yields
    (redis URL, database URL). Both are required: the rehearsal is of the production setup."""
    server = processes.postgres_server_url()
    if server is None:
        raise RuntimeError(
            "no PostgreSQL server: set BENCH_DATABASE_URL or start the local bench cluster"
        )
    with (
        processes.redis_server(folder) as redis_url,
        processes.throwaway_postgres(server, prefix="rehearsal") as database_url,
    ):
        if redis_url is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        try:
            yield redis_url, database_url
        finally:
            from django.db import connections

            connections.close_all()  # before the database is dropped


def django_on(database_url: str, redis_url: str, data_dir: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATA_DIR=data_dir,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        DEBUG="0",
    )
    os.environ.pop("APP_ENV", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def threads_that_fit() -> int:
    """THREADS, or fewer if WORKERS x THREADS connections would exceed max_connections."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('max_connections')::int, count(*) FROM pg_stat_activity"
        )
        limit, open_now = cursor.fetchone()
    fitting = (limit - open_now - CONNECTION_HEADROOM) // WORKERS
    if fitting < THREADS:
        print(f"(max_connections={limit} with {open_now} open: {fitting} threads per worker)")
    if fitting < 1:
        raise RuntimeError(f"PostgreSQL has no connections to spare (max_connections={limit})")
    return min(THREADS, fitting)


def worker_environment(data_dir: str, fake_url: str) -> dict:
    environment = dict(os.environ)
    environment.update(
        OPENAI_COMPATIBLE_BASE_URL=f"{fake_url}/v1",
        ANTHROPIC_BASE_URL=fake_url,
        ANTHROPIC_API_KEY="rehearsal",
        DATA_DIR=data_dir,
        OFFLINE_LATENCY_MS="0",
    )
    return environment


def peak_memory_mb(pid: int) -> float:
    """The process's high-water mark of resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the work -----------------------------------------------------------------------------------


def follow(label: str, total: int, done_count, finished) -> float:
    """Show a progress bar until finished(); returns the wall time in seconds."""
    from tqdm import tqdm

    started = time.perf_counter()
    with tqdm(total=total, desc=label, unit="", dynamic_ncols=True) as bar:
        while True:
            done = done_count()
            bar.update(done - bar.n)
            if finished():
                return time.perf_counter() - started
            time.sleep(POLL_SECONDS)


def enrich_cases():
    from benchmark.models import BenchmarkSet, JobStatus
    from benchmark.services import cases
    from benchmark.tasks import enrichment_start

    benchmark_set = cases.benchmark_set_create(
        name="rehearsal", distribution=cases.distribution_default_ensure(), size=CASES,
        sampler_seed=11, generator_model="offline/careful",
    )  # fmt: skip
    enrichment_start(benchmark_set)
    entries = benchmark_set.entries

    def finished() -> bool:
        status = BenchmarkSet.objects.values_list("status", flat=True).get(pk=benchmark_set.pk)
        return status == JobStatus.FINISHED

    follow("enrich cases", CASES, lambda: entries.exclude(status="pending").count(), finished)
    return benchmark_set


def play_run(benchmark_set, threads: int):
    from benchmark.models import Run
    from benchmark.services import agents
    from benchmark.services.runs import AgentChoice, run_launch
    from benchmark.tasks import run_dispatch_task

    configs = {config.slug: config for config in agents.agent_configs_ensure_shipped()}
    run = run_launch(
        name="rehearsal",
        benchmark_set=benchmark_set,
        agents=[AgentChoice(m, configs[c]) for m in AGENT_MODELS for c in AGENT_CONFIGS],
        patient_model=PATIENT_MODEL,
        roster_model=ROSTER_MODEL,
        concurrency=WORKERS * threads,
        use_cache=False,
        seed=3,
    )
    run_dispatch_task.delay(run.pk)
    total = run.conversations.count()
    seconds = follow(
        "conversations",
        total,
        lambda: run.conversations.exclude(status__in=("pending", "running")).count(),
        lambda: Run.objects.values_list("status", flat=True).get(pk=run.pk) == "finished",
    )
    return run, total, seconds


def score(run, threads: int):
    from jury.models import ScoringJob
    from jury.services import juries, scoring
    from jury.tasks import scoring_start

    jury = juries.jury_create(name="rehearsal jury", judges=list(JUDGES))
    job = scoring.scoring_launch(run=run, jury=jury, use_cache=False, concurrency=WORKERS * threads)
    total = job.scores.count()
    scoring_start(job)
    seconds = follow(
        "judge calls",
        total,
        lambda: job.scores.exclude(status="pending").count(),
        lambda: ScoringJob.objects.values_list("status", flat=True).get(pk=job.pk) == "finished",
    )
    return job, total, seconds


# --- pages on the result ------------------------------------------------------------------------


def _median_server_time(client, url: str) -> tuple[float, float]:
    """(first request, median of REPEATS after it)."""
    times = []
    for _ in range(REPEATS + 1):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}")
    return times[0], statistics.median(times[1:])


def page_times(job) -> dict[str, tuple[float, float]]:
    from django.test import Client
    from django.urls import reverse

    from accounts.models import Role, Track, User
    from annotation.services import enrolment, queue, studies
    from jury.services import rubrics

    researcher = User.objects.create_user("rehearsal-researcher", role=Role.RESEARCHER)
    study = studies.study_create(
        spec=studies.StudySpec(
            project_name="Rehearsal", name="Rehearsal study", kind="target",
            sample_size=min(STUDY_ITEMS, job.run.conversations.count()), seed=5,
        ),
        scoring_jobs=[job], rubric_versions=rubrics.current_versions(),
    )  # fmt: skip
    annotator = User.objects.create_user(
        "rehearsal-clinician", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
    )
    enrolment.member_enrol(project=study.project, annotator=annotator, actor=researcher)
    assignment = queue.next_assignment(study=study, annotator=annotator)
    client = Client()
    client.force_login(researcher)
    report = _median_server_time(client, reverse("jury:report", args=[job.pk]))
    client.force_login(annotator)
    review = _median_server_time(client, reverse("annotation:review", args=[assignment.public_id]))
    return {"report": report, "review": review}


# --- the bench ----------------------------------------------------------------------------------


def rehearse() -> dict:
    from bench.fake_models import respond
    from tests.fakes.llm_server import running_fake_llm_server

    figures: dict = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-rehearsal-") as data_dir,
        services(Path(data_dir)) as (redis_url, database_url),
        running_fake_llm_server(responder=respond, record=False) as fake,
    ):
        django_on(database_url, redis_url, data_dir)
        # Reads Django settings at import: only once they point at the rehearsal's services.
        from benchmark.services.workers import worker_start, worker_stop

        environment = worker_environment(data_dir, fake.url)
        figures["threads"] = threads = threads_that_fit()
        workers = [
            worker_start(concurrency=threads, log_file=Path(data_dir) / f"worker-{n}.log",
                         environment=environment)
            for n in range(WORKERS)
        ]  # fmt: skip
        try:
            benchmark_set = enrich_cases()
            run, figures["conversations"], figures["run_seconds"] = play_run(benchmark_set, threads)
            job, figures["judge_calls"], figures["scoring_seconds"] = score(run, threads)
            figures["peak_mb"] = [peak_memory_mb(worker.pid) for worker in workers]
        finally:
            for worker in workers:
                worker_stop(worker)
        figures.update(outcome(run, job))
        figures["pages"] = page_times(job)
    return figures


def outcome(run, job) -> dict:
    from django.db import connection

    from benchmark.models import ModelCall

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size_bytes = cursor.fetchone()[0]
    calls = ModelCall.objects.filter(run=run)
    return {
        "finished": run.conversations.filter(status="finished").count(),
        "valid_scores": job.scores.filter(status="valid").count(),
        "model_calls": calls.exclude(purpose="roster").count(),
        "turns": statistics.mean(
            run.conversations.filter(status="finished").values_list("assistant_turns", flat=True)
        ),
        "database_mb": size_bytes / 1_000_000,
    }


def rows(figures: dict) -> list[dict]:
    conversations, judge_calls = figures["conversations"], figures["judge_calls"]
    run_rate = conversations / figures["run_seconds"]
    judge_rate = judge_calls / figures["scoring_seconds"]
    print(
        f"(rehearsal: {conversations:,} conversations in {figures['run_seconds']:.0f} s, "
        f"{figures['model_calls']:,} agent and patient calls, {figures['turns']:.1f} assistant "
        f"turns on average; {judge_calls:,} judge calls in {figures['scoring_seconds']:.0f} s; "
        f"{WORKERS} workers x {figures['threads']} threads; peak worker memory "
        f"{', '.join(f'{mb:.0f}' for mb in figures['peak_mb'])} MB)"
    )
    report_first, report = figures["pages"]["report"]
    review_first, review = figures["pages"]["review"]
    print(f"(first request: report {report_first:.2f} s, review {review_first:.3f} s)")
    scale = f"{conversations:,} conversations"
    return [
        _row(f"rehearsal: conversations finished of {conversations:,}",
             figures["finished"], conversations, "", ">="),
        _row(f"rehearsal: valid judge scores of {judge_calls:,}",
             figures["valid_scores"], judge_calls, "", ">="),
        _row("rehearsal: conversations per second, all workers", run_rate, None, "/s"),
        _row(f"rehearsal: conversations per second per worker process ({figures['threads']} "
             "threads)",
             run_rate / WORKERS, None, "/s"),
        _row("rehearsal: judge calls per second, all workers", judge_rate, None, "/s"),
        _row("rehearsal: judge calls per second per worker process", judge_rate / WORKERS,
             None, "/s"),
        _row(f"rehearsal: PostgreSQL database size, {scale}", figures["database_mb"], None, "MB"),
        _row("rehearsal: peak worker memory (largest process)", max(figures["peak_mb"]),
             None, "MB"),
        _row(f"rehearsal: jury report page on the result, {scale}", report,
             PAGE_TARGETS["report"], "s", "<"),
        _row("rehearsal: review page in a study drawn from the result", review,
             PAGE_TARGETS["review"], "s", "<"),
    ]  # fmt: skip


def _row(name, measured, target, unit, goal="") -> dict:
    if target is None:
        ok = True  # a figure to report, with no target in the issue
    elif goal == ">=":
        ok = measured >= target
    else:
        ok = measured < target
    return {"name": name, "measured": round(measured, 4), "target": target, "unit": unit,
            "ok": ok, "goal": goal}  # fmt: skip


def run() -> list[dict]:
    # A stopped bench still stops its workers and Redis and drops its database (the finally
    # blocks run on SystemExit; the workers live in their own sessions and would outlive it).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return rows(rehearse())


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
