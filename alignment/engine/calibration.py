"""Fitting a jury to clinicians, and measuring the fitted jury on conversations it never saw.

Variants (VARIANTS) fit, per rubric, from the clinicians' score of each conversation (the mean
of its clinicians, adjudicated scores already merged in by the caller):
- judge maps: an isotonic (monotone) regression of the clinicians' score on each judge's score;
  the rubric's score is the mean of the mapped judges;
- jury score map: an isotonic regression of the clinicians' score on the jury mean;
- judge weights: non-negative least squares of the clinicians' score on the judges' scores with
  a free intercept (scipy's NNLS on [scores, 1, -1]);
- judge weights + jury score map: the weighted score, then an isotonic map of it;
- prompt examples: a few clinician-scored conversations per rubric, covering the score levels,
  put in the judge prompt. Its scores come from judging again, so the engine only chooses the
  examples (`fold_examples`, `fit`); the service has fold juries score the held-out folds.

Honest measurement is cross-fitting: the rated conversations are split into FOLDS folds; each
fold is scored by a calibration fitted on the other folds only, so no conversation's own
clinician scores reach its calibrated score (tests/alignment/engine/test_calibration_fit.py
changes one conversation's clinician scores and checks its calibrated score does not move).
`evaluate` then computes the study report's figures (agreement_table, population-weighted when
given a design, and the alternative annotator test) on those held-out scores, and
`learning_curve` repeats the cross-fit with 10, 20, 40, ... training conversations.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import nnls
from sklearn.isotonic import IsotonicRegression

from alignment.engine.agreement import RubricAgreement, agreement_table
from alignment.engine.alt_test import DEFAULT_EPSILON, AltTest, alt_test
from alignment.engine.bootstrap import RESAMPLES
from alignment.engine.frames import HIGHEST, ITEM, JURY, LOWEST, RATER, RUBRIC, SCORE, round_half_up
from jury.engine.calibration import Calibration, Example, RubricCalibration, ScoreMap
from jury.engine.score_gaps import is_adjacent

JUDGE_MODEL = "judge_model"
TARGET = "target"
SPREAD = "spread"
N_RATINGS = "n"
FOLDS = 5
EXAMPLES_PER_RUBRIC = 5
FIRST_CURVE_SIZE = 10
# Fewer training conversations than this for a rubric: nothing is fitted for it (the rubric
# scores as the current jury does), since a monotone map through a handful of points is noise.
MIN_TRAINING = 5


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    parts: tuple[str, ...]  # jury.engine.calibration.PARTS it fits
    needs_judging: bool = False  # its held-out scores come from judging again (examples)


VARIANTS: dict[str, Variant] = {
    variant.key: variant
    for variant in (
        Variant("current", "Current jury", ()),
        Variant("judge_maps", "Judge score maps", ("judge_maps",)),
        Variant("aggregate_map", "Jury score map", ("aggregate_map",)),
        Variant("weights", "Judge weights", ("weights",)),
        Variant("weights_map", "Judge weights + jury score map", ("weights", "aggregate_map")),
        Variant("examples", "Prompt examples", ("examples",), needs_judging=True),
    )
}
DEFAULT_VARIANT = "weights_map"


def variant_of(key: str) -> Variant:
    if key not in VARIANTS:
        raise ValueError(f"unknown calibration variant {key!r}; choose from {', '.join(VARIANTS)}")
    return VARIANTS[key]


# --- folds and targets ----------------------------------------------------------------------


def assign_folds(items: Collection[int], *, folds: int = FOLDS, seed: int = 0) -> dict[int, int]:
    """Item -> fold 0..folds-1: a seeded shuffle of the sorted items dealt round-robin, so the
    folds differ in size by at most one and the same items always fall the same way."""
    if folds < 2:
        raise ValueError("cross-fitting needs at least two folds")
    ordered = sorted({int(item) for item in items})
    order = np.random.default_rng(seed).permutation(len(ordered))
    return {ordered[index]: position % folds for position, index in enumerate(order)}


def targets(clinicians_long: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, rubric): the clinicians' mean score, their spread (max - min) and
    how many rated it."""
    grouped = clinicians_long.groupby([ITEM, RUBRIC], sort=True)[SCORE]
    table = grouped.agg(["mean", "max", "min", "count"]).reset_index()
    table[SPREAD] = table["max"] - table["min"]
    return table.rename(columns={"mean": TARGET, "count": N_RATINGS})[
        [ITEM, RUBRIC, TARGET, SPREAD, N_RATINGS]
    ]


# --- fitting one rubric ----------------------------------------------------------------------


@dataclass(frozen=True)
class RubricData:
    """One rubric's judge scores (items x judges, NaN where missing) and clinician targets."""

    items: np.ndarray
    judges: list[str]
    scores: np.ndarray
    target: np.ndarray  # NaN where no clinician rated the item

    def trainable(self, rows: np.ndarray) -> np.ndarray:
        return rows & ~np.isnan(self.target) & ~np.isnan(self.scores).any(axis=1)


def rubric_data(judges_rubric: pd.DataFrame, targets_rubric: pd.DataFrame) -> RubricData:
    wide = judges_rubric.pivot_table(index=ITEM, columns=JUDGE_MODEL, values=SCORE, aggfunc="mean")
    items = np.union1d(wide.index.to_numpy(dtype=np.int64), targets_rubric[ITEM].to_numpy(np.int64))
    wide = wide.reindex(items)
    target = targets_rubric.set_index(ITEM)[TARGET].reindex(items).to_numpy(dtype=float)
    return RubricData(items, [str(j) for j in wide.columns], wide.to_numpy(dtype=float), target)


def fit_rubric(variant: Variant, scores: np.ndarray, judges: Sequence[str], target: np.ndarray):
    """A RubricCalibration of `variant`'s numeric parts from complete training rows."""
    if not variant.parts or variant.needs_judging or len(target) < MIN_TRAINING:
        return RubricCalibration()
    if "judge_maps" in variant.parts:
        maps = {judge: _isotonic(scores[:, j], target) for j, judge in enumerate(judges)}
        return RubricCalibration(judge_maps=maps)
    weights, intercept = {}, 0.0
    combined = scores.mean(axis=1)
    if "weights" in variant.parts:
        weights, intercept = _nnls_weights(scores, judges, target)
        combined = intercept + scores @ np.array([weights[judge] for judge in judges])
    aggregate = _isotonic(combined, target) if "aggregate_map" in variant.parts else None
    return RubricCalibration(weights=weights, intercept=intercept, aggregate_map=aggregate)


def _isotonic(x: np.ndarray, y: np.ndarray) -> ScoreMap:
    model = IsotonicRegression(y_min=LOWEST, y_max=HIGHEST, increasing=True, out_of_bounds="clip")
    model.fit(x, y)
    return ScoreMap(tuple(map(float, model.X_thresholds_)), tuple(map(float, model.y_thresholds_)))


def _nnls_weights(scores: np.ndarray, judges: Sequence[str], target: np.ndarray):
    """Non-negative judge weights and a free intercept (as the difference of two non-negative
    columns); with no positive weight (the judges carry no signal) equal weights, shifted."""
    ones = np.ones((len(target), 1))
    solution, _ = nnls(np.hstack([scores, ones, -ones]), target)
    weights = solution[: len(judges)]
    if not (weights > 0).any():
        weights = np.full(len(judges), 1 / len(judges))
        return _as_weights(judges, weights), float(np.mean(target - scores @ weights))
    return _as_weights(judges, weights), float(solution[-2] - solution[-1])


def _as_weights(judges: Sequence[str], weights: np.ndarray) -> dict[str, float]:
    return {judge: float(weight) for judge, weight in zip(judges, weights, strict=True)}


def _apply(calibration: RubricCalibration, data: RubricData, rows: np.ndarray) -> np.ndarray:
    return calibration.combine_matrix(data.scores[rows], data.judges)


# --- examples ---------------------------------------------------------------------------------


def select_examples(
    rubric_targets: pd.DataFrame,
    rubric: str,
    feedback: Mapping[tuple[int, str], str] | None = None,
    *,
    per_rubric: int = EXAMPLES_PER_RUBRIC,
) -> tuple[Example, ...]:
    """Up to `per_rubric` conversations covering the clinicians' score levels: per level the
    conversation its clinicians agreed on best (smallest spread, then most clinicians, then
    lowest id), lowest level first; then the runners-up of each level until full."""
    feedback = feedback or {}
    table = rubric_targets.assign(level=round_half_up(rubric_targets[TARGET].to_numpy()))
    table = table.sort_values(
        ["level", SPREAD, N_RATINGS, ITEM], ascending=[True, True, False, True]
    )
    table["rank"] = table.groupby("level").cumcount()
    chosen = table.sort_values(["rank", "level"]).head(per_rubric).sort_values(["level", ITEM])
    return tuple(
        Example(int(item), int(level), feedback.get((int(item), rubric), ""))
        for item, level in zip(chosen[ITEM], chosen["level"], strict=True)
    )


def examples_calibration(
    clinicians_long: pd.DataFrame,
    feedback: Mapping[tuple[int, str], str] | None = None,
    *,
    per_rubric: int = EXAMPLES_PER_RUBRIC,
) -> Calibration:
    """An examples-only calibration chosen from every conversation in clinicians_long."""
    return Calibration(
        {
            rubric: RubricCalibration(
                examples=select_examples(rows, rubric, feedback, per_rubric=per_rubric)
            )
            for rubric, rows in targets(clinicians_long).groupby(RUBRIC, sort=True)
        }
    )


def fold_examples(
    clinicians_long: pd.DataFrame,
    *,
    folds: Mapping[int, int],
    feedback: Mapping[tuple[int, str], str] | None = None,
    per_rubric: int = EXAMPLES_PER_RUBRIC,
) -> dict[int, Calibration]:
    """Fold k -> the examples its held-out conversations are judged with, chosen only from
    the other folds' conversations."""
    fold = clinicians_long[ITEM].map(folds)
    return {
        k: examples_calibration(
            clinicians_long[fold.notna() & (fold != k)], feedback, per_rubric=per_rubric
        )
        for k in sorted(set(folds.values()))
    }


# --- cross-fitting and the final fit ----------------------------------------------------------


def _by_rubric(judges_long: pd.DataFrame, clinicians_long: pd.DataFrame) -> dict[str, RubricData]:
    table = targets(clinicians_long)
    judges_by_rubric = dict(tuple(judges_long.groupby(RUBRIC, sort=True)))
    targets_by_rubric = dict(tuple(table.groupby(RUBRIC, sort=True)))
    empty_targets = table.iloc[0:0]
    return {
        rubric: rubric_data(rows, targets_by_rubric.get(rubric, empty_targets))
        for rubric, rows in judges_by_rubric.items()
    }


def cross_fit(
    judges_long: pd.DataFrame,
    clinicians_long: pd.DataFrame,
    *,
    variant: str,
    folds: Mapping[int, int],
    train_sizes: Mapping[int, int] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Held-out calibrated jury means of every item in `folds`: item, rubric, jury (NaN where a
    judge score is missing). judges_long: item, rubric, judge_model, score.

    train_sizes (fold -> n) fits each fold on only n of its training conversations, the first
    n of a seeded shuffle (the learning curve)."""
    chosen = variant_of(variant)
    if chosen.needs_judging:
        raise ValueError(
            f"the {chosen.label.lower()} variant is measured by judging again: score the "
            "held-out folds with fold juries (fold_examples) instead"
        )
    frames = []
    for rubric, data in _by_rubric(judges_long, clinicians_long).items():
        values = np.full(len(data.items), np.nan)
        fold_of = np.array([folds.get(int(item), -1) for item in data.items])
        for k in sorted(set(folds.values())):
            training = data.trainable(fold_of >= 0) & (fold_of != k)
            if train_sizes is not None:
                training = _first(training, train_sizes[k], seed + k)
            calibration = fit_rubric(
                chosen, data.scores[training], data.judges, data.target[training]
            )
            held_out = fold_of == k
            values[held_out] = _apply(calibration, data, held_out)
        kept = fold_of >= 0
        frames.append(pd.DataFrame({ITEM: data.items[kept], RUBRIC: rubric, JURY: values[kept]}))
    return _concat(frames, [ITEM, RUBRIC, JURY])


def _first(rows: np.ndarray, n: int, seed: int) -> np.ndarray:
    where = np.flatnonzero(rows)
    keep = np.random.default_rng(seed).permutation(where)[:n]
    chosen = np.zeros_like(rows)
    chosen[keep] = True
    return chosen


def fit(
    judges_long: pd.DataFrame,
    clinicians_long: pd.DataFrame,
    *,
    variant: str,
    feedback: Mapping[tuple[int, str], str] | None = None,
    items: Collection[int] | None = None,
    per_rubric: int = EXAMPLES_PER_RUBRIC,
) -> Calibration:
    """The calibration to promote: fitted on every rated item (or only `items`)."""
    chosen = variant_of(variant)
    if items is not None:
        wanted = set(items)
        clinicians_long = clinicians_long[clinicians_long[ITEM].isin(wanted)]
        judges_long = judges_long[judges_long[ITEM].isin(wanted)]
    if chosen.needs_judging:
        return examples_calibration(clinicians_long, feedback, per_rubric=per_rubric)
    rubrics = {}
    for rubric, data in _by_rubric(judges_long, clinicians_long).items():
        rows = data.trainable(np.ones(len(data.items), dtype=bool))
        calibration = fit_rubric(chosen, data.scores[rows], data.judges, data.target[rows])
        if calibration.parts:
            rubrics[rubric] = calibration
    return Calibration(rubrics)


# --- measuring ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    agreement: RubricAgreement
    alt: AltTest


def evaluate(
    clinicians_long: pd.DataFrame,
    jury_long: pd.DataFrame,
    *,
    design_long: pd.DataFrame | None = None,
    epsilon: float = DEFAULT_EPSILON,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, Evaluation]:
    """The study report's figures for one variant's held-out jury means, per rubric in
    jury_long: agreement (population-weighted when a design is given) and the alternative
    annotator test."""
    rated = clinicians_long[[ITEM, RUBRIC, RATER, SCORE]]
    judged = jury_long[RUBRIC].unique()
    rated = rated[rated[RUBRIC].isin(judged)]
    table = agreement_table(
        rated, jury_long, resamples=resamples, seed=seed, design_long=design_long
    )
    clinicians_by_rubric = dict(tuple(rated.groupby(RUBRIC, sort=False)))
    evaluations = {}
    for rubric, rows in jury_long.groupby(RUBRIC, sort=True):
        clinicians = clinicians_by_rubric.get(rubric, rated.iloc[0:0])[[ITEM, RATER, SCORE]]
        jury = rows.set_index(ITEM)[JURY]
        evaluations[rubric] = Evaluation(
            agreement=table[rubric],
            alt=alt_test(clinicians, jury, epsilon=epsilon, resamples=resamples, seed=seed),
        )
    return evaluations


CURVE_COLUMNS = [RUBRIC, "n_train", "adjacent", "mean_signed_diff", "mean_abs_diff", "n_items"]


def curve_sizes(n_training: int) -> list[int]:
    """10, 20, 40, ... below the smallest fold's training set, then that whole set."""
    sizes, size = [], FIRST_CURVE_SIZE
    while size < n_training:
        sizes.append(size)
        size *= 2
    return [*sizes, n_training] if n_training >= MIN_TRAINING else []


def learning_curve(
    judges_long: pd.DataFrame,
    clinicians_long: pd.DataFrame,
    *,
    variant: str,
    folds: Mapping[int, int],
    sizes: Sequence[int] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Held-out agreement against the number of clinician-scored conversations the fit used:
    per rubric and size, adjacent agreement and the mean signed and absolute difference over
    every fold's held-out conversations (point estimates)."""
    fold_sizes = pd.Series(folds).value_counts()
    n_training = int(len(folds) - fold_sizes.max()) if len(fold_sizes) else 0
    table = targets(clinicians_long)
    rows = []
    for size in sizes if sizes is not None else curve_sizes(n_training):
        train_sizes = dict.fromkeys(fold_sizes.index, min(size, n_training))
        jury = cross_fit(
            judges_long,
            clinicians_long,
            variant=variant,
            folds=folds,
            train_sizes=train_sizes,
            seed=seed,
        )
        rows += _curve_rows(jury.merge(table, on=[ITEM, RUBRIC]), min(size, n_training))
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def _curve_rows(merged: pd.DataFrame, size: int) -> list[dict]:
    rows = []
    for rubric, group in merged.dropna(subset=[JURY]).groupby(RUBRIC, sort=True):
        gap = group[JURY].to_numpy() - group[TARGET].to_numpy()
        rows.append(
            {
                RUBRIC: rubric,
                "n_train": size,
                "adjacent": float(np.mean(is_adjacent(gap))),
                "mean_signed_diff": float(gap.mean()),
                "mean_abs_diff": float(np.abs(gap).mean()),
                "n_items": len(gap),
            }
        )
    return rows


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
