"""The leaderboard across runs: each model's aggregate per scoring job, labelled "verified" or
"custom".

An entry is *verified* when everything that decides its number is the data this site ships,
checked by hash, so anyone installing the same release can reproduce it:

1. the run was launched here (not imported) and kept its manifest at launch (Run.inputs);
2. every data file the run read at launch (benchmark.services.provenance.RUN_DATA: the
   distributions, personalities, prompts, agent files, prices, rubrics, judge prompt) has the
   sha256 of the packaged file today, none added or missing;
3. its case set was sampled here from a packaged distribution file, byte for byte;
4. every agent is a packaged agent configuration, byte for byte;
5. the job judged the whole run with the packaged rubric files (byte for byte) and the
   packaged judge prompt, by a jury with the packaged weights, pass threshold and merge mode
   and no calibration.

The judge models and the models under test are the entry's own choice and are shown beside
it. Anything else is *custom*, with the reasons listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from django.db.models import QuerySet

from benchmark.engine.agents.agent_config import AGENTS_DIR
from benchmark.engine.distribution import DEFAULT_DISTRIBUTION_PATH
from benchmark.engine.manifest import sha256_bytes, sha256_text
from benchmark.models import Run
from benchmark.services import provenance
from jobs.models import JobStatus
from jury.engine.aggregate import PASS_THRESHOLD
from jury.engine.rubrics import RUBRICS_DIR, default_weights, load_rubrics
from jury.models import MergeMode, ScoringJob
from jury.services import reports

VERIFIED, CUSTOM = "verified", "custom"
# Reports are built per job (bootstrap intervals): the page shows the newest ones.
ENTRIES_SHOWN = 40


@dataclass(frozen=True)
class Verification:
    reasons: list[str] = field(default_factory=list)  # why it is custom; empty: verified

    @property
    def label(self) -> str:
        return CUSTOM if self.reasons else VERIFIED


def job_verification(job: ScoringJob, *, packaged_files: dict | None = None) -> Verification:
    """Whether the job's numbers come from the shipped data, unmodified (the module's rule).
    `packaged_files` (provenance.run_data_files) saves hashing them again for each job."""
    packaged_files = packaged_files or provenance.run_data_files()
    return Verification(_run_reasons(job.run, packaged_files) + _jury_reasons(job))


def _run_reasons(run: Run, packaged_files: dict[str, str]) -> list[str]:
    benchmark_set = run.benchmark_set
    if benchmark_set.imported_from or run.config.get("imported_from"):
        return ["its conversations were imported, not run here"]
    if not run.inputs:
        return ["the run kept no manifest at launch"]
    reasons = _data_file_reasons(run.inputs.get("data_files", {}), packaged_files)
    distribution = benchmark_set.distribution
    if distribution is None or sha256_text(distribution.yaml_text) not in _packaged(
        DEFAULT_DISTRIBUTION_PATH.parent
    ):
        reasons.append("its case set was not sampled from a packaged distribution file")
    agents = run.agents.select_related("agent_config")
    for agent in agents:
        config = agent.agent_config
        if config is None or sha256_text(config.yaml_text) not in _packaged(AGENTS_DIR):
            reasons.append(f"agent {agent.label} is not a packaged agent configuration")
    return reasons


def _data_file_reasons(at_launch: dict[str, str], packaged: dict[str, str]) -> list[str]:
    changed = sorted(
        name for name in at_launch.keys() & packaged if at_launch[name] != packaged[name]
    )
    missing, added = sorted(packaged.keys() - at_launch), sorted(at_launch.keys() - packaged)
    return (
        [f"data file {name} differs from the packaged one" for name in changed]
        + [f"data file {name} was not there at launch" for name in missing]
        + [f"data file {name} is not a packaged file" for name in added]
    )


def _jury_reasons(job: ScoringJob) -> list[str]:
    jury = job.jury
    reasons = []
    if job.conversations.exists():
        reasons.append("the job scored only some of the run's conversations")
    if job.judge_template:
        reasons.append("the judge prompt was edited")
    for version in job.rubric_versions.all():
        if sha256_text(version.yaml_text) not in _packaged(RUBRICS_DIR):
            reasons.append(f"rubric {version.rubric_id} v{version.version} is not a packaged file")
    if jury.calibration:
        reasons.append("the jury is calibrated to a study")
    if jury.pass_threshold != PASS_THRESHOLD or jury.merge_mode != MergeMode.MEAN:
        reasons.append("the jury's pass threshold or merge mode is not the packaged one")
    if jury.weights != _packaged_weights():
        reasons.append("the jury's rubric weights are not the packaged ones")
    return reasons


@cache
def _packaged(folder: Path) -> frozenset[str]:
    """sha256 of each YAML file shipped in `folder` (read once per process)."""
    return frozenset(sha256_bytes(path.read_bytes()) for path in folder.glob("*.yaml"))


@cache
def _packaged_weights() -> dict[str, float]:
    return {key: float(value) for key, value in default_weights(load_rubrics()).items()}


# --- the entries ---------------------------------------------------------------------------


def finished_jobs() -> QuerySet[ScoringJob]:
    """Finished whole-run scoring jobs, newest first (a study's re-score is not an entry)."""
    jobs = ScoringJob.objects.filter(status=JobStatus.FINISHED, conversations__isnull=True)
    return jobs.select_related("run__benchmark_set__distribution", "jury").order_by("-pk")


def leaderboard_jobs() -> list[ScoringJob]:
    return list(finished_jobs()[:ENTRIES_SHOWN])


def leaderboard_entries(jobs: list[ScoringJob]) -> list[dict]:
    """One entry per (job, model): aggregate with its interval, n, and the job's label; best
    aggregate first."""
    entries, packaged_files = [], provenance.run_data_files()
    for job in jobs:
        report = reports.Report(job)
        if report.empty:
            continue
        verification = job_verification(job, packaged_files=packaged_files)
        for model, row in reports.model_table(report).iterrows():
            entries.append(
                {
                    "model": report.label(model),
                    "job": job.pk,
                    "run": job.run.name,
                    "jury": job.jury.name,
                    "judges": list(job.jury.judges),
                    "mean": float(row["aggregate_mean"]),
                    "low": _number(row["aggregate_low"]),
                    "high": _number(row["aggregate_high"]),
                    "interval_text": reports.aggregate_interval_text(row),
                    "n": int(row["n"]),
                    "label": verification.label,
                    "reasons": verification.reasons,
                }
            )
    return sorted(entries, key=lambda entry: -entry["mean"])


def _number(value) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
