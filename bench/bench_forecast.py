"""The paper configuration's forecast, learnt from a small offline run, and the forecast's speed.

Builds a throwaway SQLite database (a temporary DATA_DIR; DATABASE_URL and REDIS_URL are
ignored), enriches 8 cases with offline/standard, plays them with offline/careful and the
offline patient, scores them with the demo's two offline judges on the six rubrics, then
forecasts the paper's configuration from those units: 12,000 cases, one agent, one repetition
(12,000 conversations), two judges x six rubrics (144,000 judge calls), with real model strings
priced from llm/data/prices.yaml (MODELS below). The offline scripts' token counts stand in for
the real models' (an estimate of the shape of the bill, not a quote): their conversations are
as long as the scripts make them, printed beside the paper's ~6.5 turns.

Speed: the whole forecast (the earlier units read from the database, the arithmetic), best of
a few repeats. Target: under 1 s
(the launch page's panel asks on every change).

Run directly (`python bench/bench_forecast.py`) or from bench/run_all.py.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

PILOT_CASES = 8
PAPER_CASES = 12_000
MODELS = {
    "agent": "openai/gpt-4.1",
    "patient": "anthropic/claude-sonnet-4-5",
    "roster": "anthropic/claude-sonnet-4-5",
    "enrichment": "openai/gpt-4.1",
    "judges": ["openai/gpt-5-mini", "anthropic/claude-haiku-4-5"],
}
REPEATS = 3
TARGET_SECONDS = 1.0


def run() -> list[dict]:
    """The measured-vs-target rows of bench/run_all.py; prints the forecast on the way."""
    with tempfile.TemporaryDirectory(prefix="bench-forecast-") as data_dir:
        django_on_fresh_sqlite(data_dir)
        measured = _measure()
    print(measured["forecast"])
    print(f"offline pilot: {measured['turns']:.1f} assistant turns a conversation (paper: ~6.5)")
    seconds = measured["seconds"]
    return [
        {"name": "forecast of the paper configuration (144,000 judge calls)", "measured": seconds,
         "target": TARGET_SECONDS, "unit": "s", "ok": seconds <= TARGET_SECONDS},
    ]  # fmt: skip


def _measure() -> dict:
    from django.db.models import Avg

    from benchmark.services import forecasts
    from benchmark.services.runs import AgentChoice
    from jury.services import forecasts as jury_forecasts
    from jury.services import juries, scoring
    from llm.engine.forecast import Forecast, forecast, text_table
    from llm.services.prices import catalog_in_force
    from tests.support.builders import enriched_set, launched_run, played, shipped_agent

    pilot = played(launched_run(enriched_set(size=PILOT_CASES), name="Pilot"))
    job = scoring.scoring_launch(run=pilot, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    paper_jury = juries.jury_create(name="Paper jury", judges=MODELS["judges"])
    agent = AgentChoice(MODELS["agent"], shipped_agent("baseline"))

    def paper() -> Forecast:
        conversations, run_source = forecasts.run_demands(
            benchmark_set=pilot.benchmark_set, agents=[agent], patient_model=MODELS["patient"],
            roster_model=MODELS["roster"], cases=PAPER_CASES,
        )  # fmt: skip
        judges, job_source = jury_forecasts.scoring_demands(
            run=pilot, jury=paper_jury, conversations=PAPER_CASES
        )
        enrichment = forecasts.enrichment_demand(
            pilot.benchmark_set, cases=PAPER_CASES, model=MODELS["enrichment"]
        )
        result = forecast([*conversations, enrichment, *judges], catalog_in_force().price_for)
        result.source = f"{run_source}; {job_source}"
        return result

    seconds = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        whole = paper()
        seconds.append(time.perf_counter() - started)
    turns = pilot.conversations.aggregate(turns=Avg("assistant_turns"))["turns"]
    return {"forecast": text_table(whole), "turns": turns, "seconds": min(seconds)}


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
