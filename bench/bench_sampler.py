"""Speed of seed sampling and of the shares report over a large sample.

Run directly (`python bench/bench_sampler.py`) or call run() from a bench runner. Each figure
is the best of a few wall-clock repeats, so one slow moment on a busy machine does not fail it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark.engine.distribution import default_distribution  # noqa: E402
from benchmark.engine.distribution_report import realised_shares  # noqa: E402
from benchmark.engine.sampler import sample_seeds  # noqa: E402

SEEDS = 100_000
REPEATS = 3
SAMPLE_TARGET_SECONDS = 2.0
REPORT_TARGET_SECONDS = 1.0


def _best_of(action: Callable[[], object]) -> float:
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def _result(name: str, measured: float, target: float) -> dict:
    return {"name": name, "measured": measured, "target": target, "unit": "s",
            "ok": measured <= target}  # fmt: skip


def run() -> list[dict]:
    distribution = default_distribution()
    seeds = sample_seeds(distribution, SEEDS, 1)
    return [
        _result(
            f"sample {SEEDS:,} seeds",
            _best_of(lambda: sample_seeds(distribution, SEEDS, 1)),
            SAMPLE_TARGET_SECONDS,
        ),
        _result(
            f"shares report over {SEEDS:,} seeds",
            _best_of(lambda: realised_shares(seeds, distribution)),
            REPORT_TARGET_SECONDS,
        ),
    ]


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
