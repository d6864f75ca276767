"""A study's agreement report, computed once per study state and filters, then cached.

Besides the agreement figures on the sample, the report holds the same figures weighted back to
the population of scored conversations (alignment.services.design), the alternative annotator
test per rubric, the judge bias diagnostics, the clinician-corrected model scores
(alignment.services.corrected) and each clinician's quality overall and by week.

The state of a study is what its figures depend on: the newest annotation history entry and
save time of its assignments, and the newest judge score and the count of jury results of the
jobs it is compared with, the study's analysis settings and the model families file. Any
submission, edit, invalidation, new judge score or edited family changes the key, so a
cached report is never stale; an unchanged study is never computed twice (a
1,000-resample report of a large study takes seconds).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields
from functools import cached_property

import pandas as pd
from django.core.cache import cache

from alignment.engine.adjudicated import adjudicated_counts, with_adjudicated
from alignment.engine.agreement import RubricAgreement, agreement_table, rubric_agreement
from alignment.engine.alt_test import AltTest, alt_test
from alignment.engine.annotators import OVERALL, PERIOD, AnnotatorPeriod, annotator_quality
from alignment.engine.bootstrap import one_blas_thread
from alignment.engine.design import intervals_disjoint
from alignment.engine.disagreement import rank_disagreements
from alignment.engine.families import load_families
from alignment.engine.frames import ITEM, JUDGE, JURY, RATER, RUBRIC, SCORE
from alignment.engine.judge_bias import JudgeBias, judge_bias
from alignment.engine.judges import JudgeAgreement, judge_agreement
from alignment.engine.planner import items_needed
from alignment.engine.realism import realism_summary
from alignment.services.adjudicated import study_adjudicated
from alignment.services.corrected import CorrectedRow, corrected_rows
from alignment.services.design import study_design
from alignment.services.frames import (
    SUBMITTED,
    RubricInfo,
    StudyFrames,
    conversation_features,
    study_frames,
)
from alignment.services.state import CACHE_SECONDS, RESAMPLES, SEED, study_state
from annotation.models import Study
from jury.engine.score_gaps import is_adjacent, is_major

JUDGE_COLUMNS = [ITEM, JUDGE, SCORE]
# Every figure of RubricAgreement, in the order the per-rubric page lists them.
AGREEMENT_FIGURES = [f.name for f in fields(RubricAgreement) if f.type == "Estimate"]


@dataclass(frozen=True)
class ReportFilters:
    model: str = ""
    track: str = ""
    include_synthetic: bool = False
    # Count the conversations a calibrated jury learned from (its figures are then not held out).
    include_learned: bool = False

    @property
    def key(self) -> str:
        flags = f"{int(self.include_synthetic)}|{int(self.include_learned)}"
        return f"{self.model}|{self.track}|{flags}"


@dataclass
class RubricSection:
    rubric: RubricInfo
    agreement: RubricAgreement
    points: pd.DataFrame  # per item: item, model, jury, clinician_mean, diff, abs_diff, major
    judges: JudgeAgreement | None  # None when the jury has fewer than two judges here
    judges_reason: str = ""
    judge_models: dict[int, str] = field(default_factory=dict)  # judge index -> model
    weighted: RubricAgreement | None = None  # population-weighted; None: no design
    weighted_judges: JudgeAgreement | None = None
    alt_test: AltTest | None = None
    bias: list[JudgeBias] = field(default_factory=list)

    @property
    def differs(self) -> list[str]:
        """Figures whose sample and population-weighted intervals do not overlap."""
        return differing(self.agreement, self.weighted)


@dataclass
class RealismSection:
    rubric: RubricInfo
    summary: dict  # mean, sd, top_share, n
    agreement: RubricAgreement  # clinicians only (no jury)
    weighted: RubricAgreement | None = None
    # Conversation (item) -> its clinicians' mean score: what a fidelity review is set against.
    item_means: dict[int, float] = field(default_factory=dict)

    @property
    def differs(self) -> list[str]:
        return differing(self.agreement, self.weighted)


def differing(sample: RubricAgreement, weighted: RubricAgreement | None) -> list[str]:
    if weighted is None:
        return []
    return [
        name
        for name in AGREEMENT_FIGURES
        if intervals_disjoint(getattr(sample, name), getattr(weighted, name))
    ]


@dataclass
class StudyReport:
    study_id: int
    filters: ReportFilters
    resamples: int
    sections: list[RubricSection]
    realism: list[RealismSection]
    excluded: dict[str, int]
    excluded_annotations: dict[str, int]
    n_items: int
    n_ratings: int
    raters: dict
    annotators: pd.DataFrame = field(default_factory=pd.DataFrame)
    models: list[str] = field(default_factory=list)  # every model label in the study
    design_source: str = ""  # where the weights come from (alignment.services.design)
    design_reason: str = ""  # why there are none: the report shows the sample only
    epsilon: float = 0.2  # the study's alternative annotator test margin
    corrected: list[CorrectedRow] = field(default_factory=list)
    annotator_quality: list[AnnotatorPeriod] = field(default_factory=list)  # per clinician
    annotator_weeks: list[AnnotatorPeriod] = field(default_factory=list)  # per clinician, week

    @property
    def weighted(self) -> bool:
        return not self.design_reason

    # "Jury vs adjudicated": per judged rubric, the jury figures with each adjudicated score as
    # the clinician value of its conversation, and how many conversations that replaced.
    adjudicated: dict[str, RubricAgreement] = field(default_factory=dict)
    adjudicated_items: dict[str, int] = field(default_factory=dict)
    # Synthetic clinicians' ratings counted (only when the filters include them).
    synthetic_ratings: int = 0
    # Conversations the jury learned from (a calibrated version): left out of the jury figures
    # unless the filters include them; `learned_note` says which on pages and exports.
    learned: int = 0
    learned_note: str = ""

    @property
    def deactivated_raters(self) -> list[str]:
        return sorted(r.username for r in self.raters.values() if not r.active)

    @property
    def adjudicated_rows(self) -> list[dict]:
        """Per judged rubric: the jury against the clinician mean and against the adjudicated
        scores (where a senior clinician adjudicated), side by side."""
        return [
            {
                "rubric": s.rubric,
                "mean": s.agreement,
                "adjudicated": self.adjudicated.get(s.rubric.rubric_id, s.agreement),
                "items": self.adjudicated_items.get(s.rubric.rubric_id, 0),
            }
            for s in self.sections
        ]

    def section(self, rubric_id: str) -> RubricSection | None:
        return next((s for s in self.sections if s.rubric.rubric_id == rubric_id), None)

    def hits(self, rubric_id: str) -> list[bool]:
        """Per item with a jury and clinicians: is the jury within one point (adjacent)?"""
        section = self.section(rubric_id)
        if section is None or section.points.empty:
            return []
        return is_adjacent(section.points["abs_diff"]).tolist()


def study_report(
    study: Study,
    filters: ReportFilters = ReportFilters(),  # noqa: B008 - frozen, shared safely
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> StudyReport:
    key = f"alignment:report:{study.pk}:{filters.key}:{resamples}:{seed}:{study_state(study)}"
    report = cache.get(key)
    if report is None:
        report = compute_report(study, filters, resamples=resamples, seed=seed)
        cache.set(key, report, CACHE_SECONDS)
    return report


def compute_report(
    study: Study, filters: ReportFilters, *, resamples: int = RESAMPLES, seed: int = SEED
) -> StudyReport:
    one_blas_thread()
    return _compute_report(study, filters, resamples=resamples, seed=seed)


def _compute_report(
    study: Study, filters: ReportFilters, *, resamples: int, seed: int
) -> StudyReport:
    frames = study_frames(
        study,
        include_synthetic=filters.include_synthetic,
        model=filters.model or None,
        track=filters.track or None,
        include_learned=filters.include_learned,
    )
    clinicians = frames.clinicians_long
    shown = [r for r in frames.rubrics if not filters.track or r.track in ("", filters.track)]
    judged = {r.rubric_id for r in shown if r.judged}
    jury = frames.jury_long[frames.jury_long[RUBRIC].isin(judged)]
    rated = clinicians[[ITEM, RUBRIC, RATER, SCORE]]
    table = agreement_table(rated, jury, resamples=resamples, seed=seed)
    design = study_design(study)
    design_long = design.design_long(shown) if design.weighted else None
    weighted = {}
    if design_long is not None:
        weighted = agreement_table(
            rated, jury, resamples=resamples, seed=seed, design_long=design_long
        )
    points = ranked_disagreements(frames)
    empty = rubric_agreement(clinicians.iloc[0:0][[ITEM, RATER, SCORE]], None, resamples=0)
    context = _SectionContext(
        frames, design_long, conversation_features(frames), study, resamples, seed
    )
    models = sorted(set(study.items.values_list("conversation__run_agent__label", flat=True)))
    shown_models = [filters.model] if filters.model else models
    adjudicated = study_adjudicated(study, frames.conversations)
    adjudicated = adjudicated[adjudicated[RUBRIC].isin(judged)]
    counts = adjudicated_counts(clinicians, adjudicated)
    settled = (
        agreement_table(
            with_adjudicated(clinicians, adjudicated), jury, resamples=resamples, seed=seed
        )
        if counts
        else {}
    )
    return StudyReport(
        study_id=study.pk,
        filters=filters,
        resamples=resamples,
        sections=[
            _section(r, table.get(r.rubric_id, empty), weighted.get(r.rubric_id), points, context)
            for r in shown
            if r.judged
        ],
        realism=[
            RealismSection(
                r,
                realism_summary(clinicians.loc[clinicians[RUBRIC] == r.rubric_id, SCORE].tolist()),
                table.get(r.rubric_id, empty),
                weighted.get(r.rubric_id),
                _item_means(clinicians, r.rubric_id),
            )
            for r in shown
            if not r.judged
        ],
        annotators=annotator_rows(frames),
        excluded=frames.excluded,
        excluded_annotations=frames.excluded_annotations,
        n_items=int(clinicians[ITEM].nunique()),
        n_ratings=len(clinicians),
        raters=frames.raters,
        models=models,
        design_source=design.source if design.weighted else "",
        design_reason=design.reason,
        epsilon=study.alt_test_epsilon,
        corrected=corrected_rows(frames, design, shown, shown_models),
        annotator_quality=_quality(frames, jury, resamples, seed, weekly=False),
        annotator_weeks=_quality(frames, jury, resamples, seed, weekly=True),
        adjudicated=settled,
        adjudicated_items=counts,
        synthetic_ratings=int(clinicians["synthetic"].sum()),
        learned=len(frames.learned),
        learned_note=frames.learned_note,
    )


def _item_means(clinicians: pd.DataFrame, rubric_id: str) -> dict[int, float]:
    scores = clinicians.loc[clinicians[RUBRIC] == rubric_id]
    return {int(item): float(mean) for item, mean in scores.groupby(ITEM)[SCORE].mean().items()}


@dataclass(frozen=True)
class _SectionContext:
    frames: StudyFrames
    design_long: pd.DataFrame | None
    features: pd.DataFrame
    study: Study
    resamples: int
    seed: int

    # Each long table split by rubric once, not filtered again for every section (each filter
    # compared every row's rubric text: 60,000 clinician rows six times in a large study).
    @cached_property
    def judges(self) -> dict[str, pd.DataFrame]:
        return _by_rubric(self.frames.judges_long)

    @cached_property
    def clinicians(self) -> dict[str, pd.DataFrame]:
        return _by_rubric(self.frames.clinicians_long)

    @cached_property
    def jury(self) -> dict[str, pd.DataFrame]:
        return _by_rubric(self.frames.jury_long)


def _by_rubric(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """rubric id -> its rows (in their order); a rubric without rows gets an empty table."""
    parts = {str(rubric): part for rubric, part in frame.groupby(RUBRIC, sort=False)}
    return defaultdict(lambda: frame.iloc[0:0], parts)


def _quality(frames: StudyFrames, jury: pd.DataFrame, resamples: int, seed: int, *, weekly):
    """Each clinician's agreement with the others and the jury, overall or per ISO week of
    submission, on the judged rubrics shown."""
    rated = frames.clinicians_long[frames.clinicians_long[RUBRIC].isin(jury[RUBRIC].unique())]
    if rated.empty:
        return []
    if weekly:
        weeks = pd.to_datetime(rated[SUBMITTED], utc=True).dt.isocalendar()
        period = weeks["year"].astype(str) + "-W" + weeks["week"].astype(str).str.zfill(2)
    else:
        period = OVERALL
    rated = rated.assign(**{PERIOD: period})[[ITEM, RUBRIC, RATER, SCORE, PERIOD]]
    return annotator_quality(rated, jury, resamples=resamples, seed=seed)


def ranked_disagreements(frames: StudyFrames) -> pd.DataFrame:
    """Per (item, rubric) with a jury and clinicians: jury, clinician mean, diff (jury - mean),
    abs_diff, major - largest |diff| first - with the item's model label."""
    clinicians = frames.clinicians_long[[ITEM, RUBRIC, RATER, SCORE]]
    ranked = rank_disagreements(clinicians, frames.jury_long)
    return ranked.assign(model=ranked[ITEM].map(frames.models))


def annotator_rows(frames: StudyFrames) -> pd.DataFrame:
    """Per annotator, each of their ratings against the jury mean of the same conversation:
    ratings compared, share within one point, major disagreements, mean signed difference
    (annotator - jury)."""
    merged = frames.clinicians_long.merge(frames.jury_long, on=[ITEM, RUBRIC])
    diff = merged[SCORE] - merged[JURY]
    merged = merged.assign(diff=diff, adjacent=is_adjacent(diff), major=is_major(diff))
    rows = merged.groupby(RATER).agg(
        ratings=("diff", "size"),
        adjacent=("adjacent", "mean"),
        majors=("major", "sum"),
        mean_diff=("diff", "mean"),
    )
    names = {r.id: r for r in frames.raters.values()}
    rows["username"] = [names[r].username for r in rows.index]
    rows["track"] = [names[r].track for r in rows.index]
    rows["active"] = [names[r].active for r in rows.index]
    rows["synthetic"] = [names[r].synthetic for r in rows.index]
    rows["imported"] = [names[r].imported for r in rows.index]
    return rows.reset_index().sort_values("username")


def _seat_models(judges: pd.DataFrame) -> dict[int, str]:
    """judge index -> its model: the index in order of first appearance, the model of its last
    score (one pass over the unique seats, not a Python loop over every score)."""
    last = judges.drop_duplicates(JUDGE, keep="last").set_index(JUDGE)["judge_model"]
    return {int(seat): str(last[seat]) for seat in judges[JUDGE].drop_duplicates()}


def _section(rubric, agreement, weighted, points, context: _SectionContext) -> RubricSection:
    # Conversations without a complete jury stay out of the points (counted as excluded).
    resamples, seed = context.resamples, context.seed
    own = points[(points[RUBRIC] == rubric.rubric_id) & points[JURY].notna()]
    own = own.reset_index(drop=True)
    judges = context.judges[rubric.rubric_id]
    judges = judges[judges[ITEM].isin(own[ITEM])]
    models = _seat_models(judges)
    rated = context.clinicians[rubric.rubric_id][[ITEM, RATER, SCORE]]
    jury = context.jury[rubric.rubric_id].set_index(ITEM)[JURY]
    clinician_mean = own.set_index(ITEM)["clinician_mean"]
    section = RubricSection(
        rubric,
        agreement,
        own,
        None,
        "",
        models,
        weighted=weighted,
        alt_test=alt_test(
            rated, jury, epsilon=context.study.alt_test_epsilon, resamples=resamples, seed=seed
        ),
        bias=judge_bias(
            judges[JUDGE_COLUMNS],
            models,
            jury,
            clinician_mean,
            context.features,
            load_families(),
            resamples=resamples,
            seed=seed,
        ),
    )
    if len(models) < 2:
        section.judges_reason = "fewer than two judges scored the compared conversations"
        return section
    section.judges = judge_agreement(
        judges[JUDGE_COLUMNS], clinician_mean, resamples=resamples, seed=seed
    )
    if context.design_long is not None:
        design = context.design_long[context.design_long[RUBRIC] == rubric.rubric_id]
        section.weighted_judges = judge_agreement(
            judges[JUDGE_COLUMNS], clinician_mean, resamples=resamples, seed=seed, design=design
        )
    return section


# --- precision planner -----------------------------------------------------------------------

TARGET_WIDTHS = (0.05, 0.10, 0.15, 0.20, 0.30)
DEFAULT_TARGET_WIDTH = 0.15


def planner_rows(report: StudyReport, target_width: float) -> list[dict]:
    """Per judged rubric: the adjacent-agreement interval now, and how many more annotated
    conversations would bring its width under the target (engine planner.items_needed)."""
    rows = []
    for section in report.sections:
        hits = report.hits(section.rubric.rubric_id)
        estimate = section.agreement.jury_adjacent
        width = None if estimate.low is None else estimate.high - estimate.low
        needed = items_needed(hits, target_width=target_width) if hits else None
        rows.append(
            {
                "rubric": section.rubric,
                "items": len(hits),
                "estimate": estimate,
                "width": width,
                "needed": needed,
                "reached": needed == 0,
                "reason": "" if needed is not None else _planner_reason(hits),
            }
        )
    return rows


def _planner_reason(hits: list[bool]) -> str:
    if not hits:
        return "no conversation has both a jury score and a clinician score yet"
    return "too few conversations to estimate the spread of agreement"
