"""Clinician-corrected model scores of a study (prediction-powered inference,
alignment.engine.ppi): per model and judged rubric, the jury's mean and pass rate over every
conversation the study could draw, corrected by the design-weighted clinician - jury difference
on its annotated conversations. The jury report of a scoring job shows the same rows for each
target study drawn from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from django.core.cache import cache

from alignment.engine.design import strata_pooling
from alignment.engine.frames import ITEM, JURY, RUBRIC, SCORE
from alignment.engine.ppi import (
    MIN_ANNOTATED,
    Annotated,
    CorrectedScore,
    corrected_score,
    population_figures,
    undefined_score,
)
from alignment.services.design import StudyDesign, study_design
from alignment.services.formats import estimate_value_interval, undefined_note
from alignment.services.frames import PASSED, RubricInfo, StudyFrames, study_frames
from alignment.services.state import CACHE_SECONDS, study_state
from annotation.models import Study, StudyKind
from jury.engine.score_gaps import at_least
from jury.engine.stats import export_table
from jury.models import ScoringJob

CORRECTED_METHOD = (
    "95% normal intervals cut at the ends of the scale (1-5, 0-100%), the jury's pass rate with "
    f"its Wilson interval; no corrected figure below {MIN_ANNOTATED} annotated conversations"
)


@dataclass(frozen=True)
class CorrectedRow:
    model: str
    rubric: RubricInfo
    score: CorrectedScore
    pooled_strata: str = ""  # which single-conversation strata the design variance pooled


def corrected_rows(
    frames: StudyFrames,
    design: StudyDesign,
    rubrics: list[RubricInfo],
    models: list[str],
    *,
    min_annotated: int = MIN_ANNOTATED,
) -> list[CorrectedRow]:
    """One row per model and judged rubric (models in the given order); no corrected figure
    for a model with fewer than `min_annotated` annotated conversations on the rubric."""
    thresholds = _thresholds(frames)
    means = _annotated_means(frames, thresholds)
    groups = means.groupby(["model", RUBRIC], sort=False).indices
    none = np.zeros(0, dtype=int)
    rows = []
    for model in models:
        for rubric in (rubric for rubric in rubrics if rubric.judged):
            own = means.iloc[groups.get((model, rubric.rubric_id), none)]
            score = _score(model, rubric, own, design, min_annotated)
            rows.append(CorrectedRow(model, rubric, score, _pooled(own, design, rubric)))
    return rows


def _pooled(own: pd.DataFrame, design: StudyDesign, rubric: RubricInfo) -> str:
    """Which single-conversation strata the design variance pooled ("" without a design)."""
    if not design.weighted:
        return ""
    return strata_pooling([design.stratum(i, rubric) for i in own[ITEM]]).note


def _score(
    model: str, rubric: RubricInfo, own: pd.DataFrame, design: StudyDesign, min_annotated: int
) -> CorrectedScore:
    population = design.population.get((model, rubric.rubric_id))
    if population is None:
        reason = design.population_reason or "no conversation of this model was scored"
        return undefined_score(reason, n_annotated=len(own))
    annotated = _annotated(own, design, rubric)
    if len(own) < min_annotated or own.empty:  # too few to correct: the engine says so
        return corrected_score(population, annotated, min_annotated=min_annotated)
    if not design.weighted:
        jury_mean, jury_pass = population_figures(population)
        return undefined_score(
            f"the correction needs the sampling design, which is unknown: {design.reason}",
            jury_mean=jury_mean,
            jury_pass=jury_pass,
            n_population=population.n,
            n_annotated=len(own),
        )
    return corrected_score(population, annotated, min_annotated=min_annotated)


def _annotated(own: pd.DataFrame, design: StudyDesign, rubric: RubricInfo) -> Annotated:
    items = own[ITEM].tolist()
    return Annotated(
        clinician=own["clinician"].to_numpy(dtype=float),
        jury=own[JURY].to_numpy(dtype=float),
        clinician_pass=own["clinician_pass"].to_numpy(dtype=float),
        jury_pass=own[PASSED].to_numpy(dtype=float),
        weights=np.array([design.weights.get(item, np.nan) for item in items], dtype=float),
        strata=np.array([design.stratum(item, rubric) for item in items], dtype=object),
        ratings=int(own["ratings"].sum()),
    )


def _annotated_means(frames: StudyFrames, thresholds: dict[int, float]) -> pd.DataFrame:
    """Per rated (item, rubric) with a jury result: clinician mean, its ratings, the jury's
    mean and verdict, the clinicians' verdict (mean >= the jury's pass threshold), model."""
    rated = frames.clinicians_long
    if rated.empty or frames.jury_long.empty:
        return pd.DataFrame(
            columns=[ITEM, RUBRIC, "clinician", "ratings", JURY, PASSED, "clinician_pass", "model"]
        )
    means = rated.groupby([ITEM, RUBRIC])[SCORE].agg(clinician="mean", ratings="size")
    table = means.reset_index().merge(frames.jury_long, on=[ITEM, RUBRIC], how="inner")
    threshold = table[ITEM].map(frames.jobs).map(thresholds).fillna(3.0)
    table["clinician_pass"] = at_least(table["clinician"], threshold).astype(float)
    table["model"] = table[ITEM].map(frames.models)
    return table.sort_values([RUBRIC, ITEM]).reset_index(drop=True)


def _thresholds(frames: StudyFrames) -> dict[int, float]:
    jobs = ScoringJob.objects.filter(pk__in=set(frames.jobs.values()))
    return dict(jobs.values_list("pk", "jury__pass_threshold"))


def study_corrected(study: Study) -> list[CorrectedRow]:
    """The corrected rows of one study under the default filters (every model and track,
    synthetic work left out), cached per study state like the report."""
    key = f"alignment:corrected:{study.pk}:{study_state(study)}"
    rows = cache.get(key)
    if rows is None:
        frames = study_frames(study)
        models = sorted(set(frames.models.values()))
        rows = corrected_rows(frames, study_design(study), frames.judged_rubrics, models)
        cache.set(key, rows, CACHE_SECONDS)
    return rows


def job_corrected_export(job: ScoringJob, fmt: str) -> str:
    """Every target study's corrected rows for the job, one table with a Study column."""
    parts = [corrected_table(rows, study_name=study.name) for study, rows in job_corrected(job)]
    empty = corrected_table([], study_name="-")
    table = pd.concat(parts, ignore_index=True) if parts else empty
    caption = (
        f"Clinician-corrected model scores (prediction-powered inference) of the target "
        f"studies drawn from run {job.run.name}, jury {job.jury.name}: the jury over every "
        "conversation a study could draw, corrected by the design-weighted clinician - jury "
        f"difference; {CORRECTED_METHOD}"
    )
    return export_table(table, fmt, caption=caption, label=f"job {job.pk} corrected")


def job_corrected(job: ScoringJob) -> list[tuple[Study, list[CorrectedRow]]]:
    """For the jury report of a job: each target study drawn from it (newest first), with its
    rows for the job's models (labels of the job's run)."""
    labels = set(job.run.agents.values_list("label", flat=True))
    studies = Study.objects.filter(scoring_jobs=job, kind=StudyKind.TARGET).order_by("-pk")
    return [
        (study, [row for row in study_corrected(study) if row.model in labels]) for study in studies
    ]


def corrected_table(rows, *, study_name: str = "") -> pd.DataFrame:
    """Per model and rubric: the jury's mean and pass rate over the population, beside the
    clinician-corrected ones, with intervals, N and n."""
    out = []
    for row in rows:
        score = row.score
        pooled = f"correction interval: {row.pooled_strata}" if row.pooled_strata else ""
        notes = dict.fromkeys(
            note
            for note in (
                undefined_note(score.jury_mean),
                undefined_note(score.corrected_mean),
                score.method,
                pooled,
            )
            if note
        )
        out.append(
            {
                **({"Study": study_name} if study_name else {}),
                "Model": row.model,
                "Rubric": row.rubric.name,
                "Population (N)": score.n_population,
                "Annotated (n)": score.n_annotated,
                "Ratings": score.corrected_mean.n_ratings,
                "Jury mean": estimate_value_interval(score.jury_mean, "number"),
                "Clinician-corrected mean": estimate_value_interval(score.corrected_mean, "number"),
                "Correction (clinician - jury)": estimate_value_interval(
                    score.correction, "signed"
                ),
                "Jury pass rate": estimate_value_interval(score.jury_pass, "share"),
                "Clinician-corrected pass rate": estimate_value_interval(
                    score.corrected_pass, "share"
                ),
                "Notes": "; ".join(notes),
            }
        )
    columns = (["Study"] if study_name else []) + CORRECTED_COLUMNS
    return pd.DataFrame(out, columns=columns)


CORRECTED_COLUMNS = [
    "Model",
    "Rubric",
    "Population (N)",
    "Annotated (n)",
    "Ratings",
    "Jury mean",
    "Clinician-corrected mean",
    "Correction (clinician - jury)",
    "Jury pass rate",
    "Clinician-corrected pass rate",
    "Notes",
]
