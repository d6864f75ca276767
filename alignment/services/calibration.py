"""A study's calibration page: every calibrated jury variant beside the current jury, measured
on conversations it did not learn from; the examples variant's fold juries and their scoring
jobs; the learning curve; promoting a variant to a new jury version.

The fitting and the cross-fitting are pure (alignment.engine.calibration); this module gathers
the study's inputs (counted clinician ratings with adjudicated scores in place, the judges'
scores, the design weights, the clinicians' feedback), caches the figures per study state and
writes juries and jobs.

Held-out scores of the examples variant need judge calls: fold k's jury holds examples chosen
from the other folds' conversations only and scores fold k's conversations, so no
conversation's own clinician scores reach its prompt. Those fold juries are found again by
their label, which carries a hash of their examples: new clinician scores make new folds.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

import pandas as pd
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max

from alignment.engine import calibration as engine
from alignment.engine.adjudicated import with_adjudicated
from alignment.engine.frames import ITEM, JURY, RUBRIC, SCORE
from alignment.services import figures
from alignment.services.adjudicated import study_adjudicated
from alignment.services.design import study_design
from alignment.services.frames import RubricInfo, study_frames
from alignment.services.rescoring import (
    annotated_conversations,
    configuration_progress,
    study_rescore,
)
from alignment.services.state import CACHE_SECONDS, RESAMPLES, SEED, study_state
from annotation.models import Assignment, Study
from jobs.models import JobStatus
from jury.engine.calibration import Calibration
from jury.engine.example_prompt import render_examples_block
from jury.models import JudgeScore, Jury, RubricResult, ScoringJob
from jury.services import juries, scoring
from jury.services.judge_examples import examples_of
from llm.engine.chat import Usage
from llm.services.prices import catalog_in_force

CURRENT = "current"
EXAMPLES = "examples"
DEFAULT_CURVE_VARIANT = engine.DEFAULT_VARIANT
JUDGE_MODEL = "judge_model"
CHARACTERS_PER_TOKEN = 4  # the estimate the rate limiter reserves by, too
FEEDBACK_JOINER = "\n---\n"  # between several clinicians' words on the same conversation


class CalibrationPageError(ValueError):
    """A calibration action cannot be done as asked; the message says why."""


# --- inputs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationInputs:
    """What every variant is fitted and measured on, for the study's judged rubrics."""

    rubrics: list[RubricInfo]
    clinicians: pd.DataFrame  # item, rubric, rater, score; adjudicated scores in place
    judges: pd.DataFrame  # item, rubric, judge_model, score
    jury: pd.DataFrame  # item, rubric, jury: the current jury's means
    design_long: pd.DataFrame | None  # None: the study has no design, figures are the sample's
    design_source: str
    design_reason: str
    feedback: dict[tuple[int, str], str]
    excluded: dict[str, int]

    @property
    def items(self) -> list[int]:
        return sorted(int(item) for item in self.clinicians[ITEM].unique())

    @property
    def folds(self) -> dict[int, int]:
        """Conversation -> its cross-fitting fold (seeded: the same items fall the same way)."""
        return engine.assign_folds(self.items, folds=engine.FOLDS) if self.items else {}


def calibration_inputs(study: Study, *, include_synthetic: bool = False) -> CalibrationInputs:
    frames = study_frames(study, include_synthetic=include_synthetic)
    rubrics = frames.judged_rubrics
    judged = {r.rubric_id for r in rubrics}
    adjudicated = study_adjudicated(study, frames.conversations)
    clinicians = with_adjudicated(
        frames.clinicians_long, adjudicated[adjudicated[RUBRIC].isin(judged)]
    )
    clinicians = clinicians[clinicians[RUBRIC].isin(judged)].reset_index(drop=True)
    judges = frames.judges_long
    judges = judges.loc[judges[RUBRIC].isin(judged), [ITEM, RUBRIC, JUDGE_MODEL, SCORE]]
    jury = frames.jury_long
    design = study_design(study)
    return CalibrationInputs(
        rubrics=rubrics,
        clinicians=clinicians,
        judges=judges.reset_index(drop=True),
        jury=jury.loc[jury[RUBRIC].isin(judged), [ITEM, RUBRIC, JURY]].reset_index(drop=True),
        design_long=design.design_long(rubrics) if design.weighted else None,
        design_source=design.source if design.weighted else "",
        design_reason=design.reason,
        feedback=clinician_feedback(study, judged, include_synthetic=include_synthetic),
        excluded=frames.excluded,
    )


def clinician_feedback(
    study: Study, rubric_ids: set[str], *, include_synthetic: bool
) -> dict[tuple[int, str], str]:
    """(conversation, rubric) -> what the clinicians wrote on it, in submission order; only the
    annotations the figures count."""
    assignments = Assignment.objects.filter(item__study=study).counted()
    if not include_synthetic:
        assignments = assignments.filter(synthetic=False)
    texts: dict[tuple[int, str], list[str]] = defaultdict(list)
    rows = assignments.order_by("submitted_at", "pk").values_list(
        "item__conversation_id", "feedback"
    )
    for item, feedback in rows:
        for rubric, text in (feedback or {}).items():
            if rubric in rubric_ids and str(text).strip():
                texts[(item, rubric)].append(str(text).strip())
    return {key: FEEDBACK_JOINER.join(parts) for key, parts in texts.items()}


# --- the study jury and the examples folds --------------------------------------------------


def study_jury(study: Study) -> Jury:
    """The jury the study's sample was scored by (its first scoring job's)."""
    job = study.scoring_jobs.select_related("jury").order_by("pk").first()
    if job is None:
        raise CalibrationPageError(
            "No scoring job is linked to this study: there is no jury to calibrate."
        )
    return job.jury


@dataclass(frozen=True)
class ExampleFold:
    """Fold k of the examples variant: its examples (from the other folds' conversations) and
    the conversations it scores."""

    index: int
    folds: int
    calibration: Calibration
    training: list[int]
    held_out: list[int]
    label: str
    jury: Jury | None = None  # None until launched
    jobs: tuple[ScoringJob, ...] = ()


def example_folds(study: Study, inputs: CalibrationInputs) -> list[ExampleFold]:
    """The K folds of the examples variant for the study's current clinician scores, each with
    its fold jury and jobs if they were launched."""
    assigned = inputs.folds
    folds = len(set(assigned.values()))  # fewer than FOLDS when fewer conversations
    calibrations = engine.fold_examples(inputs.clinicians, folds=assigned, feedback=inputs.feedback)
    launched = {
        jury.learned_from.get("label"): jury
        for jury in Jury.objects.filter(version=Jury.FOLD_VERSION, learned_from__study_id=study.pk)
    }
    result = []
    for k in range(folds):
        held_out = sorted(item for item, fold in assigned.items() if fold == k)
        training = sorted(item for item, fold in assigned.items() if fold != k)
        calibration = calibrations.get(k, Calibration())
        label = f"study {study.pk} fold {k + 1} of {folds} ({_fold_hash(calibration, training)})"
        jury = launched.get(label)
        jobs = tuple(jury.jobs.order_by("pk")) if jury is not None else ()
        result.append(ExampleFold(k, folds, calibration, training, held_out, label, jury, jobs))
    return result


def _fold_hash(calibration: Calibration, training: list[int]) -> str:
    data = json.dumps([calibration.to_dict(), training], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class ExamplesCost:
    conversations: int
    judges: int
    rubrics: int
    cost: Decimal | None  # None: some judge model has no price, or no call to size it by
    example_tokens: int = 0  # the examples block's tokens a call, estimated (4 characters each)
    input_tokens: int = 0  # a call's input tokens with the examples, estimated

    @property
    def calls(self) -> int:
        return self.conversations * self.judges * self.rubrics


def examples_cost(study: Study, inputs: CalibrationInputs) -> ExamplesCost:
    """Judge calls the examples variant still takes (every held-out conversation of a fold not
    launched yet x judge x rubric) and their price: each judge model's mean input and output
    tokens per score on the study's own jobs, plus the examples block every call carries (the
    longest part of the prompt: whole example conversations), at the prices in force."""
    jury = study_jury(study)
    waiting = [fold for fold in example_folds(study, inputs) if not fold.jobs]
    conversations = sum(len(fold.held_out) for fold in waiting)
    extra = _example_tokens(waiting, inputs.rubrics, jury)
    per_judge = conversations * len(inputs.rubrics)
    usage = _tokens_per_score(study)
    catalog = catalog_in_force()
    costs, input_tokens = [], 0
    for model in jury.judges:
        price = catalog.price_for(model)
        if model not in usage or price is None:
            costs.append(None)
            continue
        tokens_in, tokens_out = usage[model][0] + extra, usage[model][1]
        input_tokens = max(input_tokens, round(tokens_in))
        calls = Usage(round(tokens_in * per_judge), round(tokens_out * per_judge))
        costs.append(price.cost(calls))
    cost = None if None in costs else sum(costs, Decimal(0))
    return ExamplesCost(
        conversations, len(jury.judges), len(inputs.rubrics), cost, round(extra), input_tokens
    )


def _tokens_per_score(study: Study) -> dict[str, tuple[float, float]]:
    """Judge model -> mean (input, output) tokens of one judged score on the study's jobs."""
    usage = {}
    for job in study.scoring_jobs.all():
        for row in scoring.judge_costs(job):
            if row["scores"] and row["input_tokens"]:
                usage.setdefault(
                    row["model"],
                    (row["input_tokens"] / row["scores"], row["output_tokens"] / row["scores"]),
                )
    return usage


def _example_tokens(folds: list[ExampleFold], rubrics: list[RubricInfo], jury: Jury) -> float:
    """Mean estimated tokens of the examples block over the waiting folds and rubrics."""
    names = {rubric.rubric_id: rubric.name for rubric in rubrics}
    lengths = []
    for fold in folds:
        shown = examples_of(fold.calibration, jury=jury)
        for rubric_id, examples in shown.items():
            block = render_examples_block(
                names.get(rubric_id, rubric_id), [e.shown for e in examples]
            )
            lengths.append(len(block) / CHARACTERS_PER_TOKEN)
    return sum(lengths) / len(lengths) if lengths else 0.0


@transaction.atomic
def examples_launch(
    study: Study, *, include_synthetic: bool = False, user=None
) -> list[ScoringJob]:
    """Create each fold's jury (or reuse it) and one scoring job per run restricted to the
    fold's held-out conversations; the caller starts the jobs once this transaction commits."""
    inputs = calibration_inputs(study, include_synthetic=include_synthetic)
    if not inputs.items:
        raise CalibrationPageError(
            "No conversation of this study has a counted clinician score yet."
        )
    base = study_jury(study)
    versions = judged_versions(study)
    conversations = {c.pk: c for c in annotated_conversations(study)}
    waiting = [fold for fold in example_folds(study, inputs) if not fold.jobs]
    if not waiting:
        raise CalibrationPageError(
            "Every fold of the examples variant is already scored or scoring."
        )
    jobs = []
    for fold in waiting:
        jury = fold.jury or juries.jury_version_create(
            base,
            fold.calibration,
            learned_from=_learned_from(study, EXAMPLES, fold.training)
            | {"label": fold.label, "fold": fold.index, "folds": fold.folds},
            purpose=juries.FOLD,
            actor=user,
        )
        by_run = defaultdict(list)
        for item in fold.held_out:
            by_run[conversations[item].run].append(conversations[item])
        for run, scored in sorted(by_run.items(), key=lambda pair: pair[0].pk):
            jobs.append(
                scoring.scoring_launch(
                    run=run, jury=jury, rubric_versions=versions, conversations=scored, user=user
                )
            )
    return jobs


def examples_jobs(folds: list[ExampleFold]) -> list[ScoringJob]:
    return [job for fold in folds for job in fold.jobs]


def examples_progress(folds: list[ExampleFold]) -> dict | None:
    """The fold jobs' judge calls together (None before any was launched)."""
    jobs = examples_jobs(folds)
    if not jobs:
        return None
    return configuration_progress(_Jobs(tuple(jobs)))


@dataclass(frozen=True)
class _Jobs:
    """The fold jobs in the one shape configuration_progress reads (its `jobs`), so the
    examples' progress bar sums judge calls exactly like the re-scoring loop's."""

    jobs: tuple[ScoringJob, ...]


def examples_jury(folds: list[ExampleFold]) -> pd.DataFrame | None:
    """Held-out jury means of the examples variant: fold k's jobs' results on fold k's
    conversations, the newest job first; None until every fold's jobs have finished."""
    if any(job.status == JobStatus.RUNNING for fold in folds for job in fold.jobs):
        return None
    parts = []
    for fold in folds:
        jobs = sorted(fold.jobs, key=lambda job: -job.pk)
        rows = RubricResult.objects.filter(
            job__in=jobs, conversation_id__in=fold.held_out
        ).values_list("conversation_id", "rubric_id", "mean", "job_id")
        order = {job.pk: position for position, job in enumerate(jobs)}
        frame = pd.DataFrame(list(rows), columns=[ITEM, RUBRIC, JURY, "job"])
        frame = frame.assign(order=frame["job"].map(order)).sort_values("order")
        parts.append(frame.drop_duplicates([ITEM, RUBRIC])[[ITEM, RUBRIC, JURY]])
    if not parts or any(frame.empty for frame in parts):
        return None
    return pd.concat(parts).astype({ITEM: "int64", JURY: "float64"}).reset_index(drop=True)


# --- the page's figures ----------------------------------------------------------------------


@dataclass
class VariantRow:
    variant: engine.Variant
    evaluation: object | None  # engine.Evaluation; None: not measured yet (examples unscored)
    status: str = ""  # why there is no evaluation


@dataclass
class RubricSection:
    rubric: RubricInfo
    rows: list[VariantRow]
    n_items: int  # conversations with clinician scores on this rubric


@dataclass
class CalibrationPage:
    study_id: int
    include_synthetic: bool
    folds: int
    n_items: int
    n_ratings: int
    weighted: bool
    design_source: str
    design_reason: str
    sections: list[RubricSection]
    curve_variant: str
    curve: pd.DataFrame  # rubric, n_train, adjacent, mean_signed_diff, mean_abs_diff
    curve_svg: str
    curve_rows: list[dict]  # the curve with each rubric's name, for the table
    excluded: dict[str, int] = field(default_factory=dict)
    examples_measured: bool = False


def calibration_page(
    study: Study,
    *,
    include_synthetic: bool = False,
    curve_variant: str = DEFAULT_CURVE_VARIANT,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> CalibrationPage:
    """Every variant per judged rubric and the learning curve, cached per study state (and the
    state of the examples variant's fold jobs)."""
    if curve_variant not in curve_variants():
        raise CalibrationPageError(f"No learning curve for variant {curve_variant!r}.")
    state = f"{study_state(study)}:{_fold_jobs_state(study)}"
    key = f"alignment:calibration:{study.pk}:{int(include_synthetic)}:{curve_variant}"
    key = f"{key}:{resamples}:{seed}"
    key = f"{key}:{hashlib.sha256(state.encode()).hexdigest()[:24]}"
    page = cache.get(key)
    if page is None:
        page = _compute(study, include_synthetic, curve_variant, resamples=resamples, seed=seed)
        cache.set(key, page, CACHE_SECONDS)
    return page


def curve_variants() -> list[str]:
    """Variants whose learning curve needs no judge call."""
    return [
        key
        for key, variant in engine.VARIANTS.items()
        if key != CURRENT and not variant.needs_judging
    ]


def curve_variant_choices() -> list[tuple[str, str]]:
    return [(key, engine.VARIANTS[key].label) for key in curve_variants()]


def _fold_jobs_state(study: Study) -> str:
    jobs = list(
        ScoringJob.objects.filter(
            jury__version=Jury.FOLD_VERSION, jury__learned_from__study_id=study.pk
        ).values_list("pk", flat=True)
    )
    judged = JudgeScore.objects.filter(job__in=jobs).aggregate(newest=Max("updated_at"))
    results = RubricResult.objects.filter(job__in=jobs).aggregate(n=Count("pk"), newest=Max("pk"))
    return repr([sorted(jobs), judged, results])


def _compute(
    study: Study, include_synthetic: bool, curve_variant: str, *, resamples: int, seed: int
):
    inputs = calibration_inputs(study, include_synthetic=include_synthetic)
    juries_by_variant = _held_out_juries(study, inputs)
    evaluations = {
        key: engine.evaluate(
            inputs.clinicians,
            jury,
            design_long=inputs.design_long,
            epsilon=study.alt_test_epsilon,
            resamples=resamples,
            seed=seed,
        )
        for key, jury in juries_by_variant.items()
    }
    curve = _curve(inputs, curve_variant)
    return CalibrationPage(
        study_id=study.pk,
        include_synthetic=include_synthetic,
        folds=len(set(inputs.folds.values())),
        n_items=len(inputs.items),
        n_ratings=len(inputs.clinicians),
        weighted=inputs.design_long is not None,
        design_source=inputs.design_source,
        design_reason=inputs.design_reason,
        sections=[_section(rubric, inputs, evaluations) for rubric in inputs.rubrics],
        curve_variant=curve_variant,
        curve=curve,
        curve_svg=_curve_svg(study, curve, curve_variant, inputs.rubrics),
        curve_rows=_curve_rows(curve, inputs.rubrics),
        excluded=inputs.excluded,
        examples_measured=EXAMPLES in evaluations,
    )


def _held_out_juries(study: Study, inputs: CalibrationInputs) -> dict[str, pd.DataFrame]:
    """variant -> its held-out jury means (the current jury as it is); the examples variant only
    once its fold jobs scored every held-out conversation."""
    result = {}
    for key, variant in engine.VARIANTS.items():
        if key == CURRENT:
            result[key] = inputs.jury
        elif variant.needs_judging:
            if inputs.items:
                measured = examples_jury(example_folds(study, inputs))
                if measured is not None:
                    result[key] = measured
        elif not inputs.clinicians.empty:
            result[key] = engine.cross_fit(
                inputs.judges, inputs.clinicians, variant=key, folds=inputs.folds
            )
    return result


def _section(rubric: RubricInfo, inputs: CalibrationInputs, evaluations: dict) -> RubricSection:
    rows = []
    for key, variant in engine.VARIANTS.items():
        evaluation = evaluations.get(key, {}).get(rubric.rubric_id)
        status = ""
        if evaluation is None:
            status = (
                "not scored with examples yet" if variant.needs_judging else "no clinician scores"
            )
        rows.append(VariantRow(variant, evaluation, status))
    rated = inputs.clinicians[inputs.clinicians[RUBRIC] == rubric.rubric_id]
    return RubricSection(rubric, rows, int(rated[ITEM].nunique()))


def _curve(inputs: CalibrationInputs, variant: str) -> pd.DataFrame:
    if inputs.clinicians.empty:
        return pd.DataFrame(
            columns=[RUBRIC, "n_train", "adjacent", "mean_signed_diff", "mean_abs_diff"]
        )
    return engine.learning_curve(
        inputs.judges, inputs.clinicians, variant=variant, folds=inputs.folds
    )


def _curve_rows(curve: pd.DataFrame, rubrics: list[RubricInfo]) -> list[dict]:
    names = {rubric.rubric_id: rubric.name for rubric in rubrics}
    return [row | {RUBRIC: names.get(row[RUBRIC], row[RUBRIC])} for row in curve.to_dict("records")]


def _curve_svg(study: Study, curve: pd.DataFrame, variant: str, rubrics: list[RubricInfo]) -> str:
    names = {rubric.rubric_id: rubric.name for rubric in rubrics}
    label = engine.VARIANTS[variant].label
    figure = figures.learning_curve_figure(curve, names=names, title=f"Learning curve: {label}")
    return figures.inline_svg(figure, salt=f"calibration-{study.pk}-{variant}")


# --- promoting a variant ---------------------------------------------------------------------


@transaction.atomic
def variant_promote(
    study: Study, *, variant: str, include_synthetic: bool = False, user=None
) -> Jury:
    """Fit the variant on every clinician-scored conversation and store it as a new version of
    the study's jury (audited). Its learned_from names the conversations it learned from, so a
    report of that jury leaves them out."""
    if variant not in engine.VARIANTS or variant == CURRENT:
        raise CalibrationPageError(
            f"{variant!r} is not a calibration variant that can be promoted."
        )
    inputs = calibration_inputs(study, include_synthetic=include_synthetic)
    if not inputs.items:
        raise CalibrationPageError(
            "No conversation of this study has a counted clinician score yet."
        )
    calibration = engine.fit(
        inputs.judges, inputs.clinicians, variant=variant, feedback=inputs.feedback
    )
    learned_from = _learned_from(study, variant, inputs.items) | {
        "n_ratings": len(inputs.clinicians)
    }
    return juries.jury_version_create(
        study_jury(study),
        calibration,
        learned_from=learned_from,
        purpose=juries.PROMOTED,
        note=f"{engine.VARIANTS[variant].label}, learned from study {study.name}",
        actor=user,
    )


def promoted_versions(study: Study) -> list[Jury]:
    """Jury versions promoted from this study, newest first."""
    return list(
        Jury.objects.filter(
            learned_from__purpose=juries.PROMOTED, learned_from__study_id=study.pk
        ).order_by("-pk")
    )


def promoted_rescore(study: Study, *, jury_pk: int, user=None) -> list[ScoringJob]:
    """Re-score the study with a version promoted from it (the re-scoring loop's own launch)."""
    jury = next((j for j in promoted_versions(study) if j.pk == jury_pk), None)
    if jury is None:
        raise CalibrationPageError("That jury was not promoted from this study.")
    versions = judged_versions(study)
    return study_rescore(study, jury=jury, rubric_versions=versions, user=user)


def judged_versions(study: Study) -> list:
    """The study's rubric versions the judges score (realism is scored by clinicians only)."""
    return list(study.rubric_versions.filter(kind="dimension"))


def _learned_from(study: Study, variant: str, items: list[int]) -> dict:
    return {
        "study_id": study.pk,
        "study_name": study.name,
        "variant": variant,
        "items": list(items),
        "fitted_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
