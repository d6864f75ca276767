"""How big a load window is, and what follows from it (no Django imports)."""

from __future__ import annotations

import math
from dataclasses import dataclass

ITEM_SECONDS = 15  # the fastest an annotator gets through an item: 5 saves, 2-5 s apart
CONVERSATION_SECONDS = 1.5  # a short conversation at 200 ms per model call, so never short of work


@dataclass(frozen=True)
class LoadSize:
    annotators: int = 8
    run_threads: int = 32
    seconds: float = 75
    scoring_concurrency: int = 16
    latency_ms: int = 200
    web_processes: int = 2  # gunicorn processes, WEB_THREADS threads each
    worker_processes: int = 2  # Celery worker processes sharing the run's and the jobs' work

    def __post_init__(self):
        counts = (self.annotators, self.run_threads, self.scoring_concurrency,
                  self.web_processes, self.worker_processes)  # fmt: skip
        if min(counts) < 1:
            raise ValueError(
                "annotators, run threads, scoring concurrency and process counts must be >= 1"
            )
        if self.seconds < 5:
            raise ValueError("a load window shorter than 5 s measures nothing")

    @property
    def worker_threads(self) -> int:
        """Threads per worker process: room for every conversation and judge call in flight,
        and for the dispatch and watch tasks."""
        in_flight = self.run_threads + self.scoring_concurrency
        return math.ceil(in_flight / self.worker_processes) + 2

    @property
    def study_items(self) -> int:
        """Enough items that nobody runs out: each item takes two annotators per track."""
        per_track = math.ceil(self.annotators / 2)
        return per_track * (math.ceil(self.seconds / ITEM_SECONDS) + 1) // 2 + 3
