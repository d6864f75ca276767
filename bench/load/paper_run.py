"""The paper's run through real services, at any size: shared by the paper-scale rehearsal
(bench_rehearsal.py) and the CPU bench (bench_worker_cpu.py).

`services(folder)` starts a private redis-server, a PostgreSQL database (a cluster of its own
unless BENCH_DATABASE_URL names a server to make a throwaway database on) and the fake model
server in a process of its own, answering after 200 ms with the stand-in models of
bench/fake_models.py; Django is set up on them. `Workers` starts the Celery worker
processes. `enrich`, `play` and `score` run the three phases as production runs them, each
followed with a progress bar, and return a `Phase`: its units, wall time, progress samples
(for the throughput of every tenth of the job) and the CPU the platform's processes spent
(workers, PostgreSQL when it is the bench's own cluster, Redis; the fake server and the bench
process apart).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench import fake_server
from bench.load import processes

AGENT_MODELS = tuple(f"openai-compatible/rehearsal-model-{n}" for n in range(1, 6))
AGENT_CONFIGS = ("baseline", "clinically_grounded")
PATIENT_MODEL = "openai-compatible/rehearsal-patient"
ROSTER_MODEL = "offline/roster"
JUDGES = ("openai-compatible/rehearsal-judge", "anthropic/rehearsal-judge")
PROVIDER_SECONDS = 0.2
# Every worker thread holds its own PostgreSQL connection while it works: the workers may use
# the server's max_connections less those already open and this many for everyone else.
CONNECTION_HEADROOM = 10
POLL_SECONDS = 2.0


@dataclass
class Services:
    database_url: str
    redis_url: str
    fake_url: str
    # Processes whose CPU counts as the platform's besides the workers, by name: Redis, and
    # PostgreSQL when the bench started the cluster (a shared server's cannot be told apart).
    server_pids: dict[str, list[int]] = field(default_factory=dict)
    database_measured: bool = False


@contextlib.contextmanager
def services(folder: Path) -> Iterator[Services]:
    """Redis, PostgreSQL and the fake model server, with Django set up on them."""
    with (
        processes.redis_server(folder) as redis_url,
        _database(folder) as (database_url, postgres_pid),
        fake_server.running(PROVIDER_SECONDS) as fake_url,
    ):
        if redis_url is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        found = Services(database_url, redis_url, fake_url)
        found.server_pids["Redis"] = [processes.redis_pid(redis_url)]
        if postgres_pid is not None:
            found.server_pids["PostgreSQL"] = [postgres_pid]
            found.database_measured = True
        django_on(found, str(folder))
        try:
            yield found
        finally:
            from django.db import connections

            connections.close_all()  # before the database is dropped


@contextlib.contextmanager
def _database(folder: Path) -> Iterator[tuple[str, int | None]]:
    server = os.environ.get("BENCH_DATABASE_URL", "").strip()
    if server:
        with processes.throwaway_postgres(server, prefix="rehearsal") as url:
            yield url, None
        return
    with processes.private_postgres(folder) as found:
        if found is None:
            raise RuntimeError(
                "no PostgreSQL: install its server binaries (the bench starts a cluster of its "
                "own) or set BENCH_DATABASE_URL to a server where it may create a database"
            )
        yield found


def django_on(found: Services, data_dir: str) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATA_DIR=data_dir,
        DATABASE_URL=found.database_url,
        REDIS_URL=found.redis_url,
        DEBUG="0",
    )
    os.environ.pop("APP_ENV", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    if found.database_measured:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")


def threads_that_fit(workers: int, threads: int) -> int:
    """`threads`, or fewer if workers x threads connections would exceed max_connections."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('max_connections')::int, count(*) FROM pg_stat_activity"
        )
        limit, open_now = cursor.fetchone()
    fitting = (limit - open_now - CONNECTION_HEADROOM) // workers
    if fitting < threads:
        print(f"(max_connections={limit} with {open_now} open: {fitting} threads per worker)")
    if fitting < 1:
        raise RuntimeError(f"PostgreSQL has no connections to spare (max_connections={limit})")
    return min(threads, fitting)


class Workers:
    """`count` Celery worker processes of `threads` threads on the services."""

    def __init__(self, found: Services, data_dir: str, *, count: int, threads: int):
        from jobs.services.workers import worker_start

        environment = dict(os.environ)
        environment.update(
            OPENAI_COMPATIBLE_BASE_URL=f"{found.fake_url}/v1",
            ANTHROPIC_BASE_URL=found.fake_url,
            ANTHROPIC_API_KEY="rehearsal",
            DATA_DIR=data_dir,
            OFFLINE_LATENCY_MS="0",
        )
        self.threads = threads
        self.logs = [Path(data_dir) / f"worker-{n}.log" for n in range(count)]
        self.processes = [
            worker_start(concurrency=threads, log_file=log, environment=environment)
            for log in self.logs
        ]
        try:
            for worker, log in zip(self.processes, self.logs, strict=True):
                processes.worker_ready(worker, log)
        except processes.ServiceError:
            self.stop()  # the others would wait for the broker forever
            raise

    @property
    def pids(self) -> list[int]:
        return [worker.pid for worker in self.processes]

    def peak_memory_mb(self) -> list[float]:
        return [processes.peak_memory_mb(pid) for pid in self.pids]

    def stop(self) -> None:
        from jobs.services.workers import worker_stop

        for worker in self.processes:
            worker_stop(worker)


@dataclass
class Phase:
    name: str
    units: int
    seconds: float
    samples: list[tuple[float, int]]  # (seconds since the start, units done)
    cpu: dict[str, float]  # CPU seconds by group of processes (workers, Services.server_pids)
    # (calls, statement) PostgreSQL ran during the phase, when the bench owns the cluster
    statements: list[tuple[int, str]] | None = None

    @property
    def statement_count(self) -> int | None:
        return None if self.statements is None else sum(calls for calls, _ in self.statements)

    @property
    def rate(self) -> float:
        return self.units / self.seconds

    @property
    def cpu_seconds(self) -> float:
        return sum(self.cpu.values())

    def cpu_text(self, units: int) -> str:
        """ "workers 9.1, PostgreSQL 3.0, Redis 0.2 ms" per unit."""
        parts = [
            f"{name} {seconds * 1000 / max(units, 1):.1f}" for name, seconds in self.cpu.items()
        ]
        return ", ".join(parts) + " ms"

    def tenths(self) -> list[float]:
        """Units per second in each tenth of the units (from the progress samples)."""
        crossings = [0.0]
        for tenth in range(1, 11):
            crossings.append(_time_at(self.samples, tenth * self.units / 10))
        return [
            (self.units / 10) / max(later - earlier, 1e-9)
            for earlier, later in zip(crossings, crossings[1:], strict=False)
        ]


def _time_at(samples: list[tuple[float, int]], done: float) -> float:
    """When `done` units were done, between the two samples around it (linearly)."""
    previous = (0.0, 0)
    for sample in samples:
        if sample[1] >= done:
            (t0, d0), (t1, d1) = previous, sample
            return t0 if d1 == d0 else t0 + (t1 - t0) * (done - d0) / (d1 - d0)
        previous = sample
    return samples[-1][0]


def follow(
    name: str,
    total: int,
    done_count: Callable[[], int],
    finished: Callable[[], bool],
    measured: dict[str, list[int]],
) -> Phase:
    """Show a progress bar until finished(); the phase's figures. `measured`: the processes
    whose CPU counts, by group."""
    from tqdm import tqdm

    def cpu() -> dict[str, float]:
        return {name: processes.cpu_seconds(pids) for name, pids in measured.items()}

    cpu_before, statements_before = cpu(), statements_run()
    started = time.perf_counter()
    samples: list[tuple[float, int]] = []
    with tqdm(total=total, desc=name, unit="", dynamic_ncols=True) as bar:
        while True:
            done, now = done_count(), time.perf_counter() - started
            samples.append((now, done))
            bar.update(done - bar.n)
            if finished():
                break
            time.sleep(POLL_SECONDS)
    seconds = time.perf_counter() - started
    statements_after = statements_run()
    return Phase(
        name=name,
        units=total,
        seconds=seconds,
        samples=[*samples, (seconds, total)],
        cpu={name: seconds - cpu_before[name] for name, seconds in cpu().items()},
        statements=statements_between(statements_before, statements_after),
    )


TRANSACTION_CONTROL = r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)"


def statements_run() -> list[tuple[int, str]] | None:
    """What PostgreSQL ran so far as (calls, normalised statement), most called first, from
    pg_stat_statements (transaction control left out); None where it is not loaded."""
    from django.db import DatabaseError, connection

    if connection.vendor != "postgresql":
        return None
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT calls, query FROM pg_stat_statements WHERE query !~* %s "
                "ORDER BY calls DESC",
                [TRANSACTION_CONTROL],
            )
            return list(cursor.fetchall())
    except DatabaseError:
        return None


def statements_between(before, after) -> list[tuple[int, str]] | None:
    if before is None or after is None:
        return None
    earlier = {query: calls for calls, query in before}
    ran = [(calls - earlier.get(query, 0), query) for calls, query in after]
    return sorted((item for item in ran if item[0] > 0), reverse=True)


def _status(model, pk) -> str:
    return model.objects.values_list("status", flat=True).get(pk=pk)


def enrich(cases: int, measured: dict) -> tuple[object, Phase]:
    from benchmark.models import BenchmarkSet
    from benchmark.services import cases as case_services
    from jobs.models import JobStatus
    from jobs.services.starts import job_start

    benchmark_set = case_services.benchmark_set_create(
        name="rehearsal", distribution=case_services.distribution_default_ensure(), size=cases,
        sampler_seed=11, generator_model="offline/careful",
    )  # fmt: skip
    job_start(benchmark_set)
    entries = benchmark_set.entries
    phase = follow(
        "enrich cases", cases, lambda: entries.exclude(status="pending").count(),
        lambda: _status(BenchmarkSet, benchmark_set.pk) == JobStatus.FINISHED, measured,
    )  # fmt: skip
    return benchmark_set, phase


def play(benchmark_set, concurrency: int, measured: dict) -> tuple[object, Phase]:
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
        concurrency=concurrency,
        use_cache=False,
        seed=3,
    )
    run_dispatch_task.delay(run.pk)
    phase = follow(
        "conversations", run.conversations.count(),
        lambda: run.conversations.exclude(status__in=("pending", "queued", "running")).count(),
        lambda: _status(Run, run.pk) == "finished", measured,
    )  # fmt: skip
    return run, phase


def score(run, concurrency: int, measured: dict) -> tuple[object, Phase]:
    from jury.models import ScoringJob
    from jury.services import juries, scoring
    from jury.services.scoring import scoring_start

    jury = juries.jury_create(name="rehearsal jury", judges=list(JUDGES))
    job = scoring.scoring_launch(run=run, jury=jury, use_cache=False, concurrency=concurrency)
    total = job.scores.count()
    scoring_start(job)
    phase = follow(
        "judge calls", total, lambda: job.scores.exclude(status="pending").count(),
        lambda: _status(ScoringJob, job.pk) == "finished", measured,
    )  # fmt: skip
    return job, phase


def model_calls(run) -> int:
    """The run's agent and patient calls (the rosters come from the offline script)."""
    from benchmark.models import ModelCall

    return ModelCall.objects.filter(run=run, purpose__in=("patient", "assistant")).count()


def database_mb() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return cursor.fetchone()[0] / 1_000_000
