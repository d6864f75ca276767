"""Server time of the jury report pages over a large stored scoring job.

Builds 12,000 conversations x 2 judges x 6 rubrics of synthetic stored results (bulk_create,
no model calls) in a throwaway SQLite database inside a temporary DATA_DIR, then times GET
requests through the Django test client, so the time covers queries, pandas statistics, SVG
charts and template rendering. As in a real run, every agent plays every case (3,000 cases x 4
agents), so the paired comparison has 3,000 shared cases per pair.

Run: DJANGO_SETTINGS_MODULE=config.settings python bench/bench_reports.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

CONVERSATIONS = 12_000
AGENT_MODELS = ("offline/careful", "offline/careless", "openai/gpt-5.5", "anthropic/claude-x")
COMPLEXITIES = ("regular", "chronic", "complicated", "infeasible")
INCOMPLETE_SHARE = 0.01
REPEATS = 3
# Page -> target server time in seconds (the median of REPEATS requests after a warm-up).
TARGETS = {"report": 1.0, "comparison": 1.0, "sensitivity": 1.0, "failures": 1.0, "judges": 2.0}
BATCH = 5_000


def _build() -> int:
    """Store the synthetic job; returns its primary key."""
    import numpy as np

    from accounts.models import Role, User
    from benchmark.engine.sampler import sample_seeds
    from benchmark.models import (
        BenchmarkEntry,
        BenchmarkSet,
        Conversation,
        ConversationStatus,
        EntryStatus,
        Run,
        RunAgent,
    )
    from benchmark.services import agents, cases
    from jury.models import (
        ConversationResult,
        JudgeScore,
        RubricResult,
        ScoreStatus,
        ScoringJob,
    )
    from jury.services import juries, rubrics

    rng = np.random.default_rng(7)
    cases_count = CONVERSATIONS // len(AGENT_MODELS)
    User.objects.create_user("bench", password="bench", role=Role.ADMIN)
    distribution = cases.distribution_default_ensure()
    benchmark_set = BenchmarkSet.objects.create(
        name="Bench",
        distribution=distribution,
        sampler_seed=0,
        size=cases_count,
        generator_model="offline/standard",
        status="finished",
    )
    seeds = sample_seeds(cases.distribution_spec(distribution), cases_count, 0)
    entries = BenchmarkEntry.objects.bulk_create(
        (
            BenchmarkEntry.from_seed(
                benchmark_set,
                seed,
                status=EntryStatus.READY,
                complexity=COMPLEXITIES[seed["index"] % 4],
                generator_model="offline/standard",
                profile={},
                story="",
            )
            for seed in seeds
        ),
        batch_size=BATCH,
    )
    config = agents.agent_configs_ensure_shipped()[0]
    run = Run.objects.create(
        name="Bench run",
        benchmark_set=benchmark_set,
        patient_model="offline/patient",
        patient_prompt_version="bench",
        roster_model="offline/patient",
        config_hash="bench",
        status="finished",
    )
    run_agents = [
        RunAgent.objects.create(
            run=run, model=model, agent_config=config, label=f"{model} · {config.slug}"
        )
        for model in AGENT_MODELS
    ]
    conversations = Conversation.objects.bulk_create(
        (
            Conversation(
                run=run,
                run_agent=run_agents[i % len(run_agents)],
                entry=entries[i // len(run_agents)],
                seed=i,
                status=ConversationStatus.FINISHED,
                termination_reason="patient_ended",
            )
            for i in range(CONVERSATIONS)
        ),
        batch_size=BATCH,
    )
    jury = juries.jury_demo_ensure()
    versions = rubrics.current_versions(judged_only=True)
    job = ScoringJob.objects.create(run=run, jury=jury, status="finished")
    job.rubric_versions.set(versions)

    # scores[conversation, rubric, judge]: each model a little better or worse than the next,
    # and some cases harder than others for every model (what pairing by case accounts for).
    quality = np.arange(CONVERSATIONS) % len(run_agents) * 0.4
    difficulty = rng.normal(0, 0.5, size=cases_count)[np.arange(CONVERSATIONS) // len(run_agents)]
    noise = rng.normal(0, 1, size=(CONVERSATIONS, len(versions), len(jury.judges)))
    expected = 2.6 + quality - difficulty
    scores = np.clip(np.rint(expected[:, None, None] + noise), 1, 5).astype(int)
    JudgeScore.objects.bulk_create(
        (
            JudgeScore(
                job=job,
                conversation=conversation,
                rubric_version=version,
                judge_index=j,
                judge_model=judge,
                status=ScoreStatus.VALID,
                score=int(scores[c, r, j]),
                explanation="Synthetic score for the benchmark.",
                prompt_hash="0" * 64,
            )
            for c, conversation in enumerate(conversations)
            for r, version in enumerate(versions)
            for j, judge in enumerate(jury.judges)
        ),
        batch_size=BATCH,
    )
    means, sds = scores.mean(axis=2), scores.std(axis=2)
    passes = scores >= 3
    agreement = passes.all(axis=2) | ~passes.any(axis=2)
    RubricResult.objects.bulk_create(
        (
            RubricResult(
                job=job,
                conversation=conversation,
                rubric_id=version.rubric_id,
                mean=float(means[c, r]),
                sd=float(sds[c, r]),
                passed=bool(means[c, r] >= 3),
                pass_agreement=bool(agreement[c, r]),
            )
            for c, conversation in enumerate(conversations)
            for r, version in enumerate(versions)
        ),
        batch_size=BATCH,
    )
    weights = np.array([jury.weights[v.rubric_id] for v in versions])
    per_judge = np.einsum("crj,r->cj", scores, weights) / weights.sum()
    incomplete = rng.random(CONVERSATIONS) < INCOMPLETE_SHARE
    ConversationResult.objects.bulk_create(
        (
            ConversationResult(
                job=job,
                conversation=conversation,
                complete=not incomplete[c],
                missing=["triage_quality"] if incomplete[c] else [],
                aggregate=None if incomplete[c] else float(per_judge[c].mean()),
                judge_aggregates=dict(zip(jury.judges, per_judge[c].tolist(), strict=True)),
                booked=bool(c % 3 == 0),
                booked_type_matches=bool(c % 2) if c % 3 == 0 else None,
                fabricated_claims=["schedule_appointment"] if c % 17 == 0 else [],
                fabricated_count=int(c % 17 == 0),
            )
            for c, conversation in enumerate(conversations)
        ),
        batch_size=BATCH,
    )
    return job.pk


def _server_time(client, url: str) -> float:
    client.get(url)  # warm-up: template compilation and first-query costs
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}")
    return statistics.median(times)


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-reports-") as data_dir:
        django_on_fresh_sqlite(data_dir)
        from django.db import connections
        from django.test import Client
        from django.urls import reverse

        from accounts.models import User

        started = time.perf_counter()
        job_id = _build()
        build_seconds = time.perf_counter() - started
        client = Client()
        client.force_login(User.objects.get(username="bench"))
        results = [
            {
                "name": f"jury {page} page, {CONVERSATIONS:,} conversations x 2 judges x 6 rubrics",
                "measured": round(_server_time(client, reverse(f"jury:{page}", args=[job_id])), 3),
                "target": target,
                "unit": "s",
            }
            for page, target in TARGETS.items()
        ]
        connections.close_all()
    for result in results:
        result["ok"] = result["measured"] < result["target"]
    print(f"(synthetic data stored in {build_seconds:.1f} s)")
    return results


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
