"""Run throughput: conversations per second at 1, 8, 32 and 64 worker threads.

Every model call goes to a fake provider that answers after PROVIDER_SECONDS (200 ms), as a
remote model would; the offline scripts compose its answer inside that window, through a real
ModelRouter (no cache). Each level hands its conversations to a pool of N threads that call
`conversation_execute` and then close stale database connections - what N Celery worker
threads do with conversation tasks. Not included: the run_dispatch that the Celery task
runs after each conversation to top the run up.

Every level plays the same conversations: each run covers the same CASES cases with the same
run seed, and a level launches several such runs. So calls per conversation do not change
from level to level, and throughputs compare like with like.

Definitions:
- throughput = conversations finished / wall time of the level.
- speedup(N) = throughput(N) / throughput(1).
- framework overhead(N) = 1 - (provider calls x PROVIDER_SECONDS) / worker busy time, where
  worker busy time sums, over every conversation task, the time from the task's start to its
  end (conversation_execute plus the connection cleanup). It is the share of the time worker
  threads spend on conversations that is not spent waiting on the provider: loop, sandbox,
  database, and waits for the GIL or SQLite's write lock. With one thread busy time is the
  wall time, so it is (wall - calls x 0.2 s) / wall. Idle threads at the end of a level, when
  the queue has run dry, are not counted: a steady stream of work has no such tail (the
  throughput figures do include it). Dividing the busiest thread's waits by the wall time
  instead would let load balancing hide overhead: threads that drew short conversations take
  more of them, so the busiest thread is rarely the one that finishes last.

The database is a throwaway SQLite file in a temporary DATA_DIR (DATABASE_URL and REDIS_URL
are ignored). Run directly (`python bench/bench_runner.py`) or call run() from a bench runner.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

PROVIDER_SECONDS = 0.2
CASES = 8
# concurrency -> runs of CASES conversations; about six conversations per thread per level
RUNS_PER_LEVEL = {1: 1, 8: 6, 32: 24, 64: 48}
SPEEDUP_CONCURRENCY = 32
SPEEDUP_TARGET = 20.0
OVERHEAD_TARGET_PERCENT = 5.0
AGENT_MODEL = "offline/careful"
PATIENT_MODEL = "offline/patient"
RUN_SEED = 7


class SlowProvider:
    """A chat client that answers after a fixed 200 ms, like a remote model.

    The offline scripts compose the answer inside that window (a remote model's thinking is
    not our framework's time either); only what goes past 200 ms counts against us.
    """

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self._lock = threading.Lock()

    def chat(self, request):
        started = time.perf_counter()
        response = self.inner.chat(request)
        time.sleep(max(0.0, PROVIDER_SECONDS - (time.perf_counter() - started)))
        with self._lock:
            self.calls += 1
        return response


@dataclass(frozen=True)
class Level:
    concurrency: int
    conversations: int
    calls: int
    wall_seconds: float
    busy_seconds: float  # summed over worker threads, see the module docstring

    @property
    def throughput(self) -> float:
        return self.conversations / self.wall_seconds

    @property
    def overhead_percent(self) -> float:
        return 100 * (1 - self.calls * PROVIDER_SECONDS / self.busy_seconds)


def _use_throwaway_database(data_dir: str) -> None:
    """Point Django at a fresh SQLite file before setup, or at BENCH_DATABASE_URL (an empty
    database created for the bench); never at the real database."""
    os.environ["DATA_DIR"] = data_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["DEBUG"] = "0"  # DEBUG would keep a log of every query
    for name in ("DATABASE_URL", "REDIS_URL", "APP_ENV"):
        os.environ.pop(name, None)
    if os.environ.get("BENCH_DATABASE_URL"):
        os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def _ready_cases():
    from benchmark.services import cases

    benchmark_set = cases.benchmark_set_create(
        name="runner bench",
        distribution=cases.distribution_default_ensure(),
        size=CASES,
        sampler_seed=1,
        generator_model=AGENT_MODEL,
    )
    for entry_id in cases.pending_entry_ids(benchmark_set):
        cases.entry_enrich(entry_id)
    return benchmark_set


def _launch(benchmark_set, agent_config, *, runs: int, concurrency: int) -> list[int]:
    """Identical runs (same cases, seed and agent); returns their conversation ids."""
    from benchmark.models import Conversation
    from benchmark.services.runs import AgentChoice, run_launch

    launched = [
        run_launch(
            name=f"c{concurrency}-{number}",
            benchmark_set=benchmark_set,
            agents=[AgentChoice(AGENT_MODEL, agent_config)],
            patient_model=PATIENT_MODEL,
            concurrency=concurrency,
            use_cache=False,
            seed=RUN_SEED,
        )
        for number in range(runs)
    ]
    return list(
        Conversation.objects.filter(run__in=launched).order_by("id").values_list("id", flat=True)
    )


def _timed_worker_task(conversation_id: int) -> float:
    """Play one conversation as a worker thread would; returns the seconds it took."""
    from django.db import close_old_connections

    from benchmark.services.conversations import conversation_execute

    started = time.perf_counter()
    try:
        conversation_execute(conversation_id)
    finally:
        close_old_connections()  # as Celery's Django fixup does after every task
    return time.perf_counter() - started


def _measure(conversation_ids: list[int], concurrency: int, provider: SlowProvider) -> Level:
    from benchmark.models import Conversation, ConversationStatus

    calls_before = provider.calls
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        task_seconds = list(pool.map(_timed_worker_task, conversation_ids))
    wall = time.perf_counter() - started
    unfinished = Conversation.objects.filter(id__in=conversation_ids).exclude(
        status=ConversationStatus.FINISHED
    )
    if unfinished.exists():
        first = unfinished.first()
        raise RuntimeError(
            f"{unfinished.count()} conversations did not finish at concurrency {concurrency}; "
            f"first: {first.status} {first.termination_reason} {first.error}"
        )
    return Level(
        concurrency=concurrency,
        conversations=len(conversation_ids),
        calls=provider.calls - calls_before,
        wall_seconds=wall,
        busy_seconds=sum(task_seconds),
    )


def measure_levels() -> list[Level]:
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as data_dir:
        _use_throwaway_database(data_dir)
        from benchmark.services import agents, conversations
        from llm.clients import ModelRouter

        benchmark_set = _ready_cases()
        agent_config = agents.agent_configs_ensure_shipped()[0]
        provider = SlowProvider(ModelRouter(use_cache=False))
        # conversation_execute looks the router up on every conversation, so every worker
        # thread gets the slow provider; enrichment above ran without the delay.
        conversations.model_router = lambda use_cache: provider
        levels = []
        for concurrency, runs in RUNS_PER_LEVEL.items():
            ids = _launch(benchmark_set, agent_config, runs=runs, concurrency=concurrency)
            levels.append(_measure(ids, concurrency, provider))
        return levels


def print_table(levels: list[Level]) -> None:
    serial = levels[0].throughput
    print(
        f"{'threads':>7} {'convs':>6} {'calls/conv':>10} {'wall s':>7} {'conv/s':>7} "
        f"{'speedup':>8} {'overhead':>9}"
    )
    for level in levels:
        print(
            f"{level.concurrency:>7} {level.conversations:>6} "
            f"{level.calls / level.conversations:>10.2f} {level.wall_seconds:>7.2f} "
            f"{level.throughput:>7.2f} {level.throughput / serial:>7.1f}x "
            f"{level.overhead_percent:>8.1f}%"
        )


def run() -> list[dict]:
    levels = measure_levels()
    print_table(levels)
    serial = levels[0].throughput
    speedup = next(
        level.throughput / serial for level in levels if level.concurrency == SPEEDUP_CONCURRENCY
    )
    results = [
        {
            "name": f"runner: throughput at concurrency {SPEEDUP_CONCURRENCY} vs serial",
            "measured": speedup,
            "target": SPEEDUP_TARGET,
            "unit": "x",
            "ok": speedup >= SPEEDUP_TARGET,
            "goal": ">=",
        },
    ]
    results += [
        {
            "name": f"runner: framework overhead at concurrency {level.concurrency}",
            "measured": level.overhead_percent,
            "target": OVERHEAD_TARGET_PERCENT,
            "unit": "%",
            "ok": level.overhead_percent < OVERHEAD_TARGET_PERCENT,
            "goal": "<",
        }
        for level in levels
    ]
    return results


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
