"""What the API answers of a study: its live progress and its agreement report, every nested
object declared (a figure is an interval object, never a string)."""

from __future__ import annotations

import uuid

from ninja import Schema
from pydantic import Field

from api.schemas import Cell, StudyOut

# --- progress ----------------------------------------------------------------------------------


class TallyOut(Schema):
    """Assignment counts of one annotator or one track."""

    submitted: int
    in_progress: int
    skipped: int
    invalidated: int
    practice: int
    synthetic: int
    imported: int = Field(description="Scored elsewhere, imported from a file")
    seconds: list[int] = Field(description="Seconds on task of each submitted annotation")


class AnnotatorProgressOut(Schema):
    username: str
    track: str
    licensed: bool
    tally: TallyOut


class TrackProgressOut(Schema):
    track: str
    label: str
    overlap: int = Field(description="Clinicians asked per item on this track")
    needed: int
    filled: int
    percent: int
    tally: TallyOut


class MissingItemOut(Schema):
    item: int
    number: int = Field(description="The item's place in the study, from 1")
    conversation: uuid.UUID
    short: dict[str, int] = Field(description="Track -> seats still to fill")
    working: dict[str, int] = Field(description="Track -> seats being worked on now")


class StudyProgressOut(Schema):
    annotators: list[AnnotatorProgressOut]
    tracks: list[TrackProgressOut]
    missing: list[MissingItemOut] = Field(description="Items short of their overlap")
    median_seconds: float | None
    submitted: int
    in_progress: int
    items: int
    complete_items: int


class StudyDetailOut(StudyOut):
    progress: StudyProgressOut = Field(description="Per annotator, per track, items short")


# --- agreement ---------------------------------------------------------------------------------


class FigureOut(Schema):
    """One agreement figure with its 95% bootstrap interval and what it rests on."""

    estimate: float | None = Field(description="Null when it cannot be computed (see undefined)")
    low: float | None
    high: float | None
    n_items: int
    n_ratings: int
    undefined: str = Field(description="Why there is no figure ('' when there is one)")
    resamples: int
    note: str = Field(description="What a reader must know about the interval ('' if nothing)")


class KappaPairOut(Schema):
    rater_a: int | str
    rater_b: int | str
    kappa: FigureOut


class RubricAgreementOut(Schema):
    jury_adjacent: FigureOut
    jury_adjacent_chance: FigureOut
    jury_exact: FigureOut
    jury_exact_chance: FigureOut
    human_adjacent: FigureOut
    human_adjacent_chance: FigureOut
    human_exact: FigureOut
    human_exact_chance: FigureOut
    mean_signed_diff: FigureOut
    mean_abs_diff: FigureOut
    alpha_clinicians: FigureOut
    alpha_with_jury: FigureOut
    ac2: FigureOut
    icc: FigureOut
    spearman: FigureOut
    kappa_pairs: list[KappaPairOut]
    confusion: list[list[int]] = Field(description="Rows: clinician mean 1-5; columns: jury")
    major_disagreements: int
    n_items: int
    n_ratings: int
    n_raters: int
    n_items_without_jury: int
    n_jury_items_unrated: int
    resamples: int
    seed: int
    weighted: bool = Field(description="Population-weighted rather than the plain sample")
    pooled_strata: str


class JudgeAloneOut(Schema):
    judge: int | str
    adjacent: FigureOut
    mean_signed_diff: FigureOut


class JudgePairOut(Schema):
    judge_a: int | str
    judge_b: int | str
    adjacent: FigureOut
    exact: FigureOut
    kappa: FigureOut
    both_wrong: FigureOut
    both_wrong_if_independent: FigureOut
    error_correlation: FigureOut


class JudgeAgreementOut(Schema):
    judges: list[JudgeAloneOut]
    pairs: list[JudgePairOut]
    alpha_judges: FigureOut | None
    effective_judges: FigureOut | None
    n_judges: int
    n_items: int
    n_items_without_clinicians: int
    resamples: int
    seed: int
    weighted: bool
    pooled_strata: str


class RubricInfoOut(Schema):
    rubric_id: str
    name: str
    code: str
    kind: str = Field(description="dimension (judged) or realism (clinicians only)")
    track: str
    version: int


class RubricSectionOut(Schema):
    rubric: RubricInfoOut
    sample: RubricAgreementOut
    population_weighted: RubricAgreementOut | None = Field(description="Null: no design")
    judges: JudgeAgreementOut | None = Field(description="Null with fewer than two judges")
    judges_missing_because: str


class RealismSummaryOut(Schema):
    mean: float | None
    sd: float | None
    top_share: float | None = Field(description="Share of scores at 5")
    n: int


class RealismSectionOut(Schema):
    rubric: RubricInfoOut
    summary: RealismSummaryOut
    sample: RubricAgreementOut
    population_weighted: RubricAgreementOut | None


class AgreementFiltersOut(Schema):
    model: str
    track: str
    include_synthetic: bool
    include_learned: bool


class DesignOut(Schema):
    source: str = Field(description="Where the population weights come from ('' when none)")
    missing_because: str


class AgreementOut(Schema):
    study: int
    filters: AgreementFiltersOut
    resamples: int
    conversations: int
    ratings: int
    excluded: dict[str, int] = Field(description="Ratings left out, by reason")
    synthetic_ratings: int
    design: DesignOut
    table: list[dict[str, Cell]] = Field(description="The paper's table, one row per figure")
    rubrics: list[RubricSectionOut]
    realism: list[RealismSectionOut]
