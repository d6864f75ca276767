"""Speed of the rubric pipeline and of knowledge retrieval.

1. One instance rubric through the real OpenAI SDK against the local fake server answering
   every call after 200 ms (the answers are the offline script's for the same case, picked by
   stage): target under 2 s wall time, which needs the dual track to run in parallel (six
   model calls in series would take 1.2 s of waiting alone, five with the tracks overlapped).
   Per-stage latency and tokens are printed.
2. BM25 retrieval over 10,000 passages: target under 20 ms per query (mean over many queries).

Run directly (`python bench/bench_rubric_lab.py`) or through bench/run_all.py. Pure engine
code: no Django, no database.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm.engine.providers.client import ModelClient  # noqa: E402
from llm.engine.providers.settings import ProviderSettings  # noqa: E402
from rubric_lab.engine.knowledge import Passage, load_shipped_corpus  # noqa: E402
from rubric_lab.engine.pipeline import Case, PipelineOptions, run_pipeline  # noqa: E402
from rubric_lab.engine.retrieval import BM25Retriever  # noqa: E402
from tests.rubric_lab.stage_server import (  # noqa: E402
    StageServer,
    case_marker,
    scripted_answers,
)

PROVIDER_DELAY = 0.2
RUBRIC_TARGET_SECONDS = 2.0
CORPUS_SIZE = 10_000
QUERIES = 200
QUERY_TARGET_MS = 20.0
CASE = Case(
    key="bench",
    profile={
        "age": 67, "sex": "female", "conditions": ["Type 2 diabetes", "Atrial fibrillation"],
        "medications": [{"name": "Apixaban", "dosage": "5 mg", "frequency": "twice daily",
                         "status": "active"}],
        "allergies": ["penicillin"],
    },
    scenario={"condition": "Atrial fibrillation", "severity": "severe",
              "task_category": "health_concern", "task_subcategory": "emergency_symptoms",
              "age_group": "senior", "personality": "anxious", "complexity": "complicated",
              "story": "She has had chest tightness since the morning and wants an appointment."},
    patient_messages=("I've had chest tightness since this morning, can I see someone this week?",),
)  # fmt: skip


def rubric_rows() -> list[dict]:
    retriever = BM25Retriever(load_shipped_corpus())
    answers = {case_marker(CASE): scripted_answers(CASE, retriever)}
    server = StageServer(answers, delay_seconds=PROVIDER_DELAY).start()
    try:
        settings = ProviderSettings(
            openai_api_key="sk-bench-not-a-key", openai_base_url=server.openai_base_url,
            max_retries=0,
        )  # fmt: skip
        client = ModelClient("openai/bench-model", settings=settings, use_cache=False)
        started = time.perf_counter()
        outcome = run_pipeline(client, CASE, retriever, PipelineOptions(model="openai/bench-model"))
        wall = time.perf_counter() - started
    finally:
        server.stop()
    if not outcome.ok:
        raise SystemExit(f"the pipeline failed at {outcome.failed_stage}: {outcome.failure_reason}")
    for stage in outcome.stages:
        tokens = sum(r.usage.input_tokens + r.usage.output_tokens for r in stage.responses)
        print(f"  {stage.name:<10} {stage.elapsed_ms:7.1f} ms  {tokens:5d} tokens  {stage.status}")
    return [
        {"name": "one instance rubric, fake provider at 200 ms (dual track in parallel)",
         "measured": wall, "target": RUBRIC_TARGET_SECONDS, "unit": "s",
         "ok": wall <= RUBRIC_TARGET_SECONDS},
    ]  # fmt: skip


def synthetic_corpus(size: int, rng: random.Random) -> list[Passage]:
    """The shipped passages' vocabulary recombined into `size` passages of 40-80 words."""
    words = " ".join(p.text for p in load_shipped_corpus()).split()
    return [
        Passage(f"p{index}", "synthetic", f"Passage {index}",
                " ".join(rng.choices(words, k=rng.randint(40, 80))), "bench", "1")
        for index in range(size)
    ]  # fmt: skip


def retrieval_rows() -> list[dict]:
    rng = random.Random(7)
    corpus = synthetic_corpus(CORPUS_SIZE, rng)
    started = time.perf_counter()
    retriever = BM25Retriever(corpus)
    indexing = time.perf_counter() - started
    words = " ".join(p.text for p in corpus[:200]).split()
    queries = [" ".join(rng.choices(words, k=rng.randint(3, 8))) for _ in range(QUERIES)]
    timings = []
    for query in queries:
        started = time.perf_counter()
        retriever.search(query, 5)
        timings.append((time.perf_counter() - started) * 1000)
    mean = statistics.mean(timings)
    median, slowest = statistics.median(timings), max(timings)
    print(f"  indexed {CORPUS_SIZE:,} passages in {indexing:.2f} s; "
          f"median {median:.2f} ms, max {slowest:.2f} ms per query")  # fmt: skip
    return [
        {"name": f"BM25 query over {CORPUS_SIZE:,} passages (mean of {QUERIES})",
         "measured": mean, "target": QUERY_TARGET_MS, "unit": "ms", "ok": mean <= QUERY_TARGET_MS},
    ]  # fmt: skip


def run() -> list[dict]:
    return rubric_rows() + retrieval_rows()


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
