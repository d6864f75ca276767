"""Closing the loop: re-score a study's annotated conversations with another jury
configuration, and compare every configuration scored on the study by its agreement with the
clinicians.

A configuration is a jury (judge models, so K, and weights), one rubric version per judged
rubric and a judge prompt. The study's own configuration is the jobs its sample was drawn from.
A re-score is one ScoringJob per run, restricted to the study's annotated conversations of that
run; jury.services.scoring does the work through the usual task and response cache, so an
identical configuration costs no model call. Re-score jobs are found by their scope (every job
restricted to conversations of this study) and grouped by (jury, rubric versions, prompt):
launching the same configuration again joins its group, the newest job's result counting for a
conversation scored twice.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import pandas as pd
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max

from alignment.engine.agreement import RubricAgreement, rubric_agreement
from alignment.engine.alt_test import AltTest, alt_test
from alignment.engine.bootstrap import Estimate
from alignment.engine.compare import paired_difference
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE
from alignment.services.frames import RubricInfo, learned_note, study_frames
from alignment.services.state import CACHE_SECONDS, RESAMPLES, SEED, study_state
from annotation.models import Assignment, Study
from benchmark.models import Conversation
from common.csv_export import rows_csv
from jobs.models import JobStatus
from jury.models import JudgeScore, Jury, RubricResult, RubricVersion, ScoringJob
from jury.services import scoring

ORIGINAL = "original"
# Differences against the baseline, in the order the page shows them: (engine metric, label,
# which direction is better).
METRICS = (
    ("adjacent", "Adjacent agreement", "higher"),
    ("alpha_with_jury", "Alpha with the jury", "higher"),
    ("mean_signed_diff", "Mean signed difference", "closer to 0"),
)


@dataclass(frozen=True)
class Configuration:
    """Jobs that scored the study's conversations with one jury, rubric versions and prompt."""

    key: str
    juries: tuple[Jury, ...]
    jobs: tuple[ScoringJob, ...]
    versions: dict[str, RubricVersion]  # rubric id -> the version the judges scored
    judge_template: str  # "" for the shipped template
    original: bool = False

    @property
    def label(self) -> str:
        juries = " + ".join(jury.name for jury in self.juries)
        if self.original:
            return f"Original: {juries}"
        versions = [f"{v.code} v{v.version}" for v in self.versions.values()]
        return f"{juries} · {', '.join(versions)} · {self.prompt_label} prompt"

    @property
    def prompt_label(self) -> str:
        if not self.judge_template:
            return "shipped"
        return f"variant {_digest(self.judge_template)[:8]}"

    @property
    def running(self) -> bool:
        return any(job.status == JobStatus.RUNNING for job in self.jobs)


# --- which conversations, which configurations ----------------------------------------------


def annotated_conversations(study: Study):
    """The study's conversations with at least one submitted, valid, licensed annotation
    (synthetic work included: whether it counts is the report's toggle, not the scope's)."""
    annotated = Assignment.objects.filter(item__study=study).counted()
    return Conversation.objects.filter(
        pk__in=annotated.values("item__conversation_id")
    ).select_related("run")


@transaction.atomic
def study_rescore(
    study: Study,
    *,
    jury: Jury,
    rubric_versions: Sequence[RubricVersion],
    judge_template: str = "",
    use_cache: bool = True,
    user=None,
) -> list[ScoringJob]:
    """Launch one restricted scoring job per run over the study's annotated conversations;
    the caller starts them (jury.services.scoring.scoring_start) once this transaction commits."""
    by_run = defaultdict(list)
    for conversation in annotated_conversations(study).order_by("pk"):
        by_run[conversation.run].append(conversation)
    if not by_run:
        raise scoring.ScoringError(
            "No conversation of this study has a submitted annotation yet: a re-score would "
            "have nothing to be compared with."
        )
    return [
        scoring.scoring_launch(
            run=run,
            jury=jury,
            rubric_versions=rubric_versions,
            conversations=conversations,
            judge_template=judge_template,
            use_cache=use_cache,
            user=user,
        )
        for run, conversations in sorted(by_run.items(), key=lambda pair: pair[0].pk)
    ]


def study_configurations(study: Study) -> list[Configuration]:
    """The study's original configuration first, then each re-score in launch order."""
    configurations = []
    original = list(study.scoring_jobs.select_related("jury").order_by("pk"))
    if original:
        configurations.append(_configuration(ORIGINAL, original, original=True))
    groups: dict[str, list[ScoringJob]] = {}
    # A fold jury scores one cross-fitting fold for the calibration page: a part of a
    # measurement, not a configuration anyone would compare or pick.
    for job in (job for job in rescore_jobs(study) if not job.jury.is_fold):
        groups.setdefault(_configuration_key(job), []).append(job)
    configurations += [_configuration(key, jobs) for key, jobs in groups.items()]
    return configurations


def rescore_jobs(study: Study) -> list[ScoringJob]:
    """Jobs restricted to conversations of this study only, oldest first."""
    conversations = set(study.items.values_list("conversation_id", flat=True))
    scope = ScoringJob.conversations.through.objects
    touching = scope.filter(conversation_id__in=conversations).values("scoringjob_id")
    covered: dict[int, set[int]] = defaultdict(set)
    for job_id, conversation_id in scope.filter(scoringjob_id__in=touching).values_list(
        "scoringjob_id", "conversation_id"
    ):
        covered[job_id].add(conversation_id)
    inside = [job_id for job_id, scoped in covered.items() if scoped <= conversations]
    return list(
        ScoringJob.objects.filter(pk__in=inside)
        .select_related("jury")
        .prefetch_related("rubric_versions")
        .order_by("pk")
    )


def _configuration_key(job: ScoringJob) -> str:
    versions = "-".join(str(v.pk) for v in sorted(job.rubric_versions.all(), key=lambda v: v.pk))
    return f"{job.jury_id}.{versions}.{_digest(job.judge_template)[:12]}"


def _configuration(key: str, jobs: list[ScoringJob], *, original: bool = False) -> Configuration:
    versions: dict[str, RubricVersion] = {}
    for job in jobs:
        for version in job.rubric_versions.all():
            versions.setdefault(version.rubric_id, version)
    juries = {job.jury_id: job.jury for job in jobs}
    return Configuration(
        key=key,
        juries=tuple(juries.values()),
        jobs=tuple(jobs),
        versions=dict(sorted(versions.items(), key=lambda pair: pair[1].order)),
        judge_template=jobs[0].judge_template,
        original=original,
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- progress --------------------------------------------------------------------------------


def configuration_progress(configuration: Configuration) -> dict:
    """Judge calls of all the configuration's jobs, in the shape of scoring.scoring_progress."""
    parts = [scoring.scoring_progress(job) for job in configuration.jobs]
    counted = (
        "total",
        "valid",
        "invalid",
        "error",
        "pending",
        "cached",
        "failed",
        "done",
        "calls",
        "cached_calls",
    )
    sums = {name: sum(part[name] for part in parts) for name in counted}
    sums |= {name: sum(part[name] for part in parts) for name in ("input_tokens", "output_tokens")}
    costs = [part["cost"] for part in parts]
    total = sums["total"]
    return {
        **sums,
        "cost": None if None in costs else sum(costs, Decimal(0)),
        "percent": round(100 * sums["done"] / total, 1) if total else 100.0,
        "running": any(part["running"] for part in parts),
    }


# --- the comparison --------------------------------------------------------------------------


@dataclass
class ComparisonRow:
    configuration: Configuration
    version: RubricVersion
    agreement: RubricAgreement
    baseline: bool = False
    # metric -> configuration - baseline on the conversations both scored
    differences: dict[str, Estimate] = field(default_factory=dict)
    rank: int = 0
    alt_test: AltTest | None = None  # may this configuration replace a clinician?
    advantage_rank: int = 0  # rank by average advantage probability (0: undefined)


@dataclass
class RubricComparison:
    rubric: RubricInfo
    rows: list[ComparisonRow]  # ranked, best agreement first
    baseline_missing: bool  # the baseline did not score this rubric: no differences


@dataclass
class Comparison:
    study_id: int
    configurations: list[Configuration]
    baseline: str
    include_synthetic: bool
    resamples: int
    rubrics: list[RubricComparison]
    excluded: dict[str, int]  # ratings left out, by reason (alignment.services.frames)
    include_learned: bool = False
    # configuration key -> conversations its jury learned from: left out of its figures unless
    # include_learned (then its figures are not held out)
    learned: dict[str, int] = field(default_factory=dict)

    def learned_note(self, configuration: Configuration) -> str:
        return learned_note(self.learned.get(configuration.key, 0), included=self.include_learned)


def jury_comparison(
    study: Study,
    *,
    baseline: str = ORIGINAL,
    include_synthetic: bool = False,
    include_learned: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Comparison:
    """Every configuration side by side per judged rubric of the study, ranked by agreement
    with the clinicians, with paired bootstrap differences against the baseline (cached per
    study state). A calibrated jury's configuration is measured without the conversations it
    learned from unless `include_learned`."""
    configurations = study_configurations(study)
    keys = [c.key for c in configurations]
    if baseline not in keys:
        baseline = keys[0] if keys else ORIGINAL
    state = f"{study_state(study)}:{jobs_state(configurations)}"
    flags = f"{int(include_synthetic)}{int(include_learned)}"
    key = f"alignment:loop:{study.pk}:{baseline}:{flags}:{resamples}:{seed}"
    key = f"{key}:{hashlib.sha256(state.encode()).hexdigest()[:24]}"
    comparison = cache.get(key)
    if comparison is None:
        comparison = _compare(
            study,
            configurations,
            baseline=baseline,
            include_synthetic=include_synthetic,
            include_learned=include_learned,
            resamples=resamples,
            seed=seed,
        )
        cache.set(key, comparison, CACHE_SECONDS)
    return comparison


def jobs_state(configurations: list[Configuration]) -> str:
    jobs = sorted(job.pk for configuration in configurations for job in configuration.jobs)
    judged = JudgeScore.objects.filter(job__in=jobs).aggregate(newest=Max("updated_at"))
    results = RubricResult.objects.filter(job__in=jobs).aggregate(n=Count("pk"), newest=Max("pk"))
    return repr([jobs, judged, results])


def _compare(
    study: Study,
    configurations: list[Configuration],
    *,
    baseline: str,
    include_synthetic: bool,
    include_learned: bool,
    resamples: int,
    seed: int,
) -> Comparison:
    frames = study_frames(
        study, include_synthetic=include_synthetic, include_learned=include_learned
    )
    juries, learned = {}, {}
    for c in configurations:
        if c.original:
            juries[c.key], learned[c.key] = frames.jury_long, frames.learned
        else:
            juries[c.key], learned[c.key] = configuration_jury(
                study, c, include_synthetic=include_synthetic, include_learned=include_learned
            )
    rubrics = []
    for rubric in frames.judged_rubrics:
        rated = frames.clinicians_long
        rated = rated.loc[rated[RUBRIC] == rubric.rubric_id, [ITEM, RATER, SCORE]]
        rubrics.append(
            _rubric_comparison(
                rubric,
                rated,
                configurations,
                juries,
                baseline=baseline,
                resamples=resamples,
                seed=seed,
                epsilon=study.alt_test_epsilon,
            )
        )
    return Comparison(
        study_id=study.pk,
        configurations=configurations,
        baseline=baseline,
        include_synthetic=include_synthetic,
        resamples=resamples,
        rubrics=rubrics,
        excluded=frames.excluded,
        include_learned=include_learned,
        learned={key: len(items) for key, items in learned.items()},
    )


def configuration_jury(
    study: Study,
    configuration: Configuration,
    *,
    include_synthetic: bool = False,
    include_learned: bool = False,
) -> tuple[pd.DataFrame, frozenset[int]]:
    """Jury means of the configuration's jobs (a conversation scored by several, the same
    configuration launched again, takes the newest job's mean), and the conversations its jury
    learned from (left out of the means unless `include_learned`)."""
    frames = [
        study_frames(
            study, job=job, include_synthetic=include_synthetic, include_learned=include_learned
        )
        for job in sorted(configuration.jobs, key=lambda job: -job.pk)
    ]
    jury = pd.concat([f.jury_long for f in frames]).drop_duplicates([ITEM, RUBRIC], keep="first")
    return jury, frozenset().union(*(f.learned for f in frames))


def _rubric_comparison(
    rubric: RubricInfo,
    rated: pd.DataFrame,
    configurations: list[Configuration],
    juries: dict[str, pd.DataFrame],
    *,
    baseline: str,
    resamples: int,
    seed: int,
    epsilon: float,
) -> RubricComparison:
    def series(key: str) -> pd.Series:
        jury = juries[key]
        return jury.loc[jury[RUBRIC] == rubric.rubric_id].set_index(ITEM)[JURY]

    scored = [c for c in configurations if rubric.rubric_id in c.versions]
    has_baseline = any(c.key == baseline for c in scored)
    rows = []
    for configuration in scored:
        jury = series(configuration.key)
        row = ComparisonRow(
            configuration=configuration,
            version=configuration.versions[rubric.rubric_id],
            agreement=rubric_agreement(rated, jury, resamples=resamples, seed=seed),
            baseline=configuration.key == baseline,
            alt_test=alt_test(rated, jury, epsilon=epsilon, resamples=resamples, seed=seed),
        )
        if has_baseline and configuration.key != baseline:
            row.differences = {
                metric: paired_difference(
                    rated, jury, series(baseline), metric=metric, resamples=resamples, seed=seed
                )
                for metric, _, _ in METRICS
            }
        rows.append(row)
    rows.sort(key=_ranking)
    for rank, row in enumerate(rows, start=1):
        row.rank = rank
    _rank_by_advantage(rows)
    return RubricComparison(rubric=rubric, rows=rows, baseline_missing=not has_baseline)


def _rank_by_advantage(rows: list[ComparisonRow]) -> None:
    """Rank by the alternative annotator test's average advantage probability (Calderon et
    al.'s figure for comparing judges), higher first; ties keep the adjacent-agreement order."""
    defined = [row for row in rows if row.alt_test.advantage_probability.value is not None]
    defined.sort(key=lambda row: -row.alt_test.advantage_probability.value)
    for rank, row in enumerate(defined, start=1):
        row.advantage_rank = rank


def _ranking(row: ComparisonRow) -> tuple:
    """Adjacent agreement first (the primary metric), then alpha with the jury, then the
    smaller bias; a figure that cannot be computed ranks last."""
    agreement = row.agreement
    adjacent, alpha = agreement.jury_adjacent.value, agreement.alpha_with_jury.value
    bias = agreement.mean_signed_diff.value
    return (
        adjacent is None,
        -(adjacent or 0.0),
        alpha is None,
        -(alpha or 0.0),
        bias is None,
        abs(bias or 0.0),
    )


# --- export --------------------------------------------------------------------------------

CSV_COLUMNS = [
    "rubric",
    "rank",
    "configuration",
    "baseline",
    "jury",
    "judges",
    "rubric_version",
    "prompt",
    "jobs",
    "n_items",
    "n_ratings",
    "n_items_without_jury",
    "adjacent",
    "adjacent_low",
    "adjacent_high",
    "adjacent_chance",
    "alpha_with_jury",
    "alpha_with_jury_low",
    "alpha_with_jury_high",
    "mean_signed_diff",
    "mean_signed_diff_low",
    "mean_signed_diff_high",
    *(
        f"diff_{metric}{part}"
        for metric, _, _ in METRICS
        for part in ("", "_low", "_high", "_n_items")
    ),
    "advantage_rank",
    "advantage_probability",
    "advantage_probability_low",
    "advantage_probability_high",
    "advantage_provisional",
    "winning_rate",
    "clinicians_tested",
    "alt_test_epsilon",
    "alt_test_verdict",
    "alt_test_needs",
    "alt_test_design_warning",
    "undefined",
    "learned_conversations",  # conversations the configuration's jury learned from
    "held_out",  # "no" when those conversations are counted in this row's figures
]


def comparison_csv(comparison: Comparison) -> str:
    """One row per (rubric, configuration), ranked within each rubric; differences are
    configuration - baseline on the conversations both scored. A calibrated jury's row says how
    many conversations it learned from and whether they are left out (held out) or counted."""
    rows = (
        _csv_row(section.rubric, row) + _learned_cells(comparison, row.configuration)
        for section in comparison.rubrics
        for row in section.rows
    )
    return rows_csv(rows, header=CSV_COLUMNS)


def _learned_cells(comparison: Comparison, configuration: Configuration) -> list:
    learned = comparison.learned.get(configuration.key, 0)
    return [learned, "no" if learned and comparison.include_learned else "yes"]


def _csv_row(rubric: RubricInfo, row: ComparisonRow) -> list:
    configuration, agreement = row.configuration, row.agreement
    figures = {
        "adjacent": agreement.jury_adjacent,
        "alpha": agreement.alpha_with_jury,
        "bias": agreement.mean_signed_diff,
    }
    differences = []
    for metric, _, _ in METRICS:
        difference = row.differences.get(metric)
        differences += (
            [difference.value, difference.low, difference.high, difference.n_items]
            if difference
            else ["", "", "", ""]
        )
    return [
        rubric.rubric_id,
        row.rank,
        configuration.label,
        "yes" if row.baseline else "",
        " + ".join(jury.name for jury in configuration.juries),
        " ".join(judge for jury in configuration.juries for judge in jury.judges),
        row.version.version,
        configuration.prompt_label,
        " ".join(str(job.pk) for job in configuration.jobs),
        agreement.jury_adjacent.n_items,
        agreement.jury_adjacent.n_ratings,
        agreement.n_items_without_jury,
        *_interval(agreement.jury_adjacent),
        _blank(agreement.jury_adjacent_chance.value),
        *_interval(agreement.alpha_with_jury),
        *_interval(agreement.mean_signed_diff),
        *(_blank(value) for value in differences),
        *_alt_test_cells(row),
        "; ".join(f"{name}: {e.undefined}" for name, e in figures.items() if e.undefined),
    ]


def _alt_test_cells(row: ComparisonRow) -> list:
    test = row.alt_test
    return [
        row.advantage_rank or "",
        *_interval(test.advantage_probability),
        "yes" if test.provisional else "",
        _blank(test.winning_rate),
        test.n_tested,
        test.epsilon,
        test.verdict,  # the authors' verdict (omega >= 0.5), whatever the design
        "; ".join(test.needs),
        test.design_warning,  # the design is short of the project's conditions
    ]


def _interval(figure: Estimate) -> list:
    return [_blank(figure.value), _blank(figure.low), _blank(figure.high)]


def _blank(value) -> str | float | int:
    if value is None or value == "":
        return ""
    return round(value, 4) if isinstance(value, float) else value
