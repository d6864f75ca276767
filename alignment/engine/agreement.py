"""Jury-clinician and clinician-clinician agreement for one rubric, with bootstrap intervals.

Definitions (one line each; REPORTS prints them from the constants below; "adjacent" and
"major" are jury.engine.score_gaps, the one definition every report uses):
- adjacent agreement: share of conversations with |jury mean - clinician mean| <= 1;
- exact agreement: share of conversations where the jury mean and the clinicians' mean, each
  rounded half up to a whole score (2.5 -> 3), are the same score;
- chance baselines: the same shares expected if jury values and clinician means were
  independent draws from their observed distributions (over the same conversations):
  sum over value pairs of P(jury = j) P(mean = c) [|j - c| <= 1] (or [same rounded score]);
- human-human adjacent / exact: over every pair of clinicians who scored the same
  conversation, the share of pairs within one point / on the same score (pairs pooled, so a
  conversation with four clinicians weighs six pairs); chance from the pooled distribution of
  their scores;
- mean signed / absolute difference: jury mean - clinician mean, averaged over conversations
  (negative = jury stricter);
- Krippendorff's alpha (ordinal, value domain 1-5) among clinicians, and with the jury mean
  rounded half up as one more rater; Gwet's AC2 (quadratic weights) among clinicians;
- ICC(A,1): two-way random, absolute agreement, single rater, between jury mean and clinician
  mean; Spearman's rho between them;
- quadratic-weighted Cohen's kappa for each pair of clinicians on the conversations they share,
  over the full label set 1-5.

Counts: n_items are the conversations entering a figure, n_ratings the clinician ratings on
them. Every interval resamples conversations (bootstrap.py).

Population-weighted: given a design table (item weight and stratum), every figure is computed
with each conversation counted by its weight and the interval from a bootstrap within the
sampling strata (design.py; `pooled_strata` names the strata it had to pool, and why); counts,
the confusion matrix and the major disagreements stay those of the sample. The point estimates
then come from the sums (the libraries take no weights).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score

from alignment.engine import coefficients
from alignment.engine.bootstrap import (
    RESAMPLES,
    Estimate,
    estimate,
    ratio,
    undefined,
)
from alignment.engine.design import Batch, design_for, sample_batch, weighted_batch
from alignment.engine.frames import (
    ITEM,
    JURY,
    LEVELS,
    RATER,
    RUBRIC,
    check_ratings,
    round_half_up,
)
from alignment.engine.items import ItemColumns, RubricItems, one_hot, rubric_items, score_levels
from jury.engine.score_gaps import is_adjacent, is_major

__all__ = [
    "ADJACENT_AGREEMENT_DEFINITION",
    "CHANCE_DEFINITION",
    "EXACT_AGREEMENT_DEFINITION",
    "Estimate",
    "KappaPair",
    "RubricAgreement",
    "agreement_table",
    "rubric_agreement",
]

ADJACENT_AGREEMENT_DEFINITION = (
    "Adjacent agreement: the jury mean lies within 1 point of the clinicians' mean score."
)
EXACT_AGREEMENT_DEFINITION = (
    "Exact agreement: the jury mean and the clinicians' mean score, each rounded half up to a "
    "whole score (2.5 becomes 3), are the same score; between two clinicians, the same score."
)
CHANCE_DEFINITION = (
    "Chance: the agreement expected if jury scores and clinician means were independent draws "
    "from their observed distributions on the same conversations (between clinicians: from the "
    "pooled distribution of their scores)."
)
ALPHA_LEVEL = "ordinal"

VALUES = np.array(LEVELS, dtype=float)
AC2_WEIGHTS = coefficients.quadratic_weights(len(LEVELS))
# Score levels within one point of each other (1-5 x 1-5).
ADJACENT_LEVELS = is_adjacent(VALUES[:, None] - VALUES[None, :]).astype(float)


class KappaPair(NamedTuple):
    rater_a: object
    rater_b: object
    kappa: Estimate


@dataclass(frozen=True)
class RubricAgreement:
    """Every agreement figure of one rubric. Jury figures are undefined when `jury` was None."""

    jury_adjacent: Estimate
    jury_adjacent_chance: Estimate
    jury_exact: Estimate
    jury_exact_chance: Estimate
    human_adjacent: Estimate
    human_adjacent_chance: Estimate
    human_exact: Estimate
    human_exact_chance: Estimate
    mean_signed_diff: Estimate
    mean_abs_diff: Estimate
    alpha_clinicians: Estimate
    alpha_with_jury: Estimate
    ac2: Estimate
    icc: Estimate
    spearman: Estimate
    kappa_pairs: list[KappaPair] = field(default_factory=list)
    confusion: list[list[int]] = field(default_factory=list)  # rows clinician, cols jury
    major_disagreements: int = 0
    n_items: int = 0  # conversations with at least one clinician rating
    n_ratings: int = 0
    n_raters: int = 0
    n_items_without_jury: int = 0  # rated conversations with no (complete) jury mean
    n_jury_items_unrated: int = 0  # jury means on conversations no clinician rated
    resamples: int = 0
    seed: int = 0
    weighted: bool = False  # population-weighted (design.py) rather than the plain sample
    pooled_strata: str = ""  # which single-conversation strata the intervals pooled, and why


def _jury_columns(columns: ItemColumns, data: RubricItems) -> tuple[np.ndarray, np.ndarray]:
    """Columns for the jury-vs-clinician-mean figures; returns the distinct jury and mean
    values (the chance baseline is computed on them)."""
    paired = data.paired
    jury, mean = np.where(paired, data.jury, 0.0), np.where(paired, data.clinician_mean, 0.0)
    gap = jury - mean
    columns.add("paired", paired)
    columns.add("paired_ratings", np.where(paired, data.ratings_per_item, 0))
    columns.add("adjacent", paired & is_adjacent(gap))
    columns.add("exact", paired & (score_levels(jury) == score_levels(mean)))
    columns.add("signed", gap)
    columns.add("absolute", np.abs(gap))
    jury_values, jury_codes = np.unique(jury, return_inverse=True)
    mean_values, mean_codes = np.unique(mean, return_inverse=True)
    columns.add("jury_values", one_hot(jury_codes, len(jury_values), paired))
    columns.add("mean_values", one_hot(mean_codes, len(mean_values), paired))
    columns.add("jury_levels", one_hot(score_levels(jury), len(LEVELS), paired))
    columns.add("mean_levels", one_hot(score_levels(mean), len(LEVELS), paired))
    icc = coefficients.icc_columns(np.column_stack([jury, mean])) * paired[:, None]
    columns.add("icc", icc)
    return jury_values, mean_values


def _human_columns(columns: ItemColumns, data: RubricItems) -> None:
    counts = data.counts.astype(float)
    m = counts.sum(axis=1)
    overlapped = m >= 2
    columns.add("overlapped", overlapped)
    columns.add("overlapped_ratings", np.where(overlapped, m, 0))
    columns.add("pairs", m * (m - 1) / 2)
    # Pairs within one point: all ordered level pairs within one point, minus each rating
    # paired with itself, halved for unordered pairs.
    near = (np.einsum("ik,kl,il->i", counts, ADJACENT_LEVELS, counts) - m) / 2
    columns.add("pairs_adjacent", near)
    columns.add("pairs_exact", (counts * (counts - 1) / 2).sum(axis=1))
    columns.add("pooled_levels", counts * overlapped[:, None])
    columns.add("coincidences", coefficients.coincidence_columns(counts))
    columns.add("gwet", coefficients.gwet_columns(counts, AC2_WEIGHTS))
    if data.has_jury:
        with_jury = counts + one_hot(score_levels(data.jury), len(LEVELS), ~np.isnan(data.jury))
        columns.add("coincidences_jury", coefficients.coincidence_columns(with_jury))
        jury_pairable = with_jury.sum(axis=1) >= 2
        columns.add("jury_pairable", jury_pairable)
        columns.add("jury_pairable_ratings", np.where(jury_pairable, m, 0))


def _pair_columns(columns: ItemColumns, data: RubricItems) -> list[tuple[int, int]]:
    pairs = list(combinations(range(len(data.raters)), 2))
    for a, b in pairs:
        columns.add(
            f"kappa {a} {b}", coefficients.kappa_columns(data.scores[:, a], data.scores[:, b])
        )
    return pairs


# --- figures from sums ----------------------------------------------------------------------


def _chance(jury_counts: np.ndarray, mean_counts: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """sum_jc P(jury = j) P(mean = c) hits[j, c] from value counts on the same items."""
    n = jury_counts.sum(axis=1)
    return ratio(np.einsum("bj,jc,bc->b", jury_counts, hits, mean_counts), n * n)


def _human_chance(pooled: np.ndarray, hits: np.ndarray) -> np.ndarray:
    shares = ratio(pooled, pooled.sum(axis=1, keepdims=True))
    return np.einsum("bk,kl,bl->b", shares, hits, shares)


def _first_reason(checks: list[tuple[bool, str]], fallback: str) -> str:
    return next((reason for failed, reason in checks if failed), fallback)


class _Reasons:
    """Why a figure is undefined, in words a reader of the page understands."""

    def __init__(self, data: RubricItems) -> None:
        self.data = data
        n_paired = int(data.paired.sum())
        n_overlapped = int((data.ratings_per_item >= 2).sum())
        no_jury = "no jury scores for this rubric"
        if data.has_jury and not np.isfinite(data.jury).any():
            no_jury = "the jury has no complete score on any rated conversation"
        self.jury = _first_reason(
            [
                (len(data.items) == 0, "no clinician rated this rubric"),
                (not data.has_jury or not np.isfinite(data.jury).any(), no_jury),
                (n_paired == 0, "no conversation has both a jury score and a clinician score"),
            ],
            "",
        )
        self.human = _first_reason(
            [
                (len(data.items) == 0, "no clinician rated this rubric"),
                (len(data.raters) < 2, "only one annotator rated this rubric"),
                (n_overlapped == 0, "no conversation was scored by two or more annotators"),
            ],
            "",
        )
        self.n_paired = n_paired

    def varying(self, figure: str) -> str:
        """For correlations and ICC: undefined with fewer than two items or no spread."""
        if self.jury:
            return self.jury
        if self.n_paired < 2:
            return f"{figure} needs at least two conversations with both scores"
        return f"{figure} is undefined: the jury or the clinician means do not vary"

    def alpha(self, pooled: np.ndarray) -> str:
        if self.human:
            return self.human
        if np.count_nonzero(pooled) <= 1:
            return (
                "every rating on the shared conversations is the same score, so no "
                "disagreement is expected by chance and alpha is 0/0"
            )
        return "alpha is undefined"


def _jury_figures(
    sums: dict, counts: dict, jury_values: np.ndarray, mean_values: np.ndarray, reasons: _Reasons
) -> dict[str, Estimate]:
    paired = sums["paired"][:, 0]
    n = int(counts["paired"][0, 0])
    ratings = int(counts["paired_ratings"][0, 0])
    gaps = np.abs(jury_values[:, None] - mean_values[None, :])
    value_hits = is_adjacent(gaps).astype(float)

    def figure(values: np.ndarray, reason: str = "") -> Estimate:
        return estimate(values, n_items=n, n_ratings=ratings, reason=reason or reasons.jury)

    return {
        "jury_adjacent": figure(ratio(sums["adjacent"][:, 0], paired)),
        "jury_adjacent_chance": figure(
            _chance(sums["jury_values"], sums["mean_values"], value_hits)
        ),
        "jury_exact": figure(ratio(sums["exact"][:, 0], paired)),
        "jury_exact_chance": figure(
            _chance(sums["jury_levels"], sums["mean_levels"], np.eye(len(LEVELS)))
        ),
        "mean_signed_diff": figure(ratio(sums["signed"][:, 0], paired)),
        "mean_abs_diff": figure(ratio(sums["absolute"][:, 0], paired)),
        "icc": figure(coefficients.icc_from_sums(sums["icc"]), reasons.varying("the ICC")),
    }


def _human_figures(sums: dict, counts: dict, reasons: _Reasons) -> dict[str, Estimate]:
    n = int(counts["overlapped"][0, 0])
    ratings = int(counts["overlapped_ratings"][0, 0])
    pairs = sums["pairs"][:, 0]
    pooled = sums["pooled_levels"]

    def figure(values: np.ndarray, reason: str = "") -> Estimate:
        return estimate(values, n_items=n, n_ratings=ratings, reason=reason or reasons.human)

    return {
        "human_adjacent": figure(ratio(sums["pairs_adjacent"][:, 0], pairs)),
        "human_adjacent_chance": figure(_human_chance(pooled, ADJACENT_LEVELS)),
        "human_exact": figure(ratio(sums["pairs_exact"][:, 0], pairs)),
        "human_exact_chance": figure(_human_chance(pooled, np.eye(len(LEVELS)))),
        "alpha_clinicians": figure(
            coefficients.alpha_from_sums(sums["coincidences"], level=ALPHA_LEVEL, values=VALUES),
            reasons.alpha(counts["pooled_levels"][0]),
        ),
        "ac2": figure(coefficients.gwet_from_sums(sums["gwet"], AC2_WEIGHTS)[2]),
    }


def _alpha_with_jury(sums: dict, counts: dict, reasons: _Reasons) -> Estimate:
    if reasons.jury:
        return undefined(reasons.jury)
    n = int(counts["jury_pairable"][0, 0])
    coincidences = sums["coincidences_jury"]
    reason = (
        "no conversation has two ratings even counting the jury"
        if n == 0
        else "every rating, the jury's included, is the same score, so alpha is 0/0"
    )
    values = coefficients.alpha_from_sums(coincidences, level=ALPHA_LEVEL, values=VALUES)
    return estimate(
        values, n_items=n, n_ratings=int(counts["jury_pairable_ratings"][0, 0]), reason=reason
    )


def _kappa_pairs(
    sums: dict, counts: dict, data: RubricItems, pairs: list[tuple[int, int]], *, library: bool
) -> list[KappaPair]:
    out = []
    for a, b in pairs:
        block = sums[f"kappa {a} {b}"]
        shared = int(counts[f"kappa {a} {b}"][0, 0])
        reason = (
            "these two annotators share no conversation"
            if shared == 0
            else "both annotators gave one and the same score throughout, so kappa is 0/0"
        )
        values = coefficients.kappa_from_sums(block)
        if library:
            values[0] = _library_kappa(data.scores[:, a], data.scores[:, b], values[0])
        estimate_ = estimate(values, n_items=shared, n_ratings=2 * shared, reason=reason)
        out.append(KappaPair(data.raters[a], data.raters[b], estimate_))
    return out


def _library_kappa(a: np.ndarray, b: np.ndarray, moments_value: float) -> float:
    """scikit-learn's quadratic-weighted kappa over labels 1-5 (the page's point estimate);
    where it is 0/0 the moments already say NaN and scikit-learn would only warn."""
    if not np.isfinite(moments_value):
        return np.nan
    shared = ~(np.isnan(a) | np.isnan(b))
    # Labels 0-4 rather than 1-5: the same kappa (the weights depend on the distance between
    # levels only), and scikit-learn maps labels other than 0..n-1 one score at a time in Python.
    lowest = LEVELS[0]
    return float(
        cohen_kappa_score(
            (a[shared] - lowest).astype(int),
            (b[shared] - lowest).astype(int),
            labels=list(range(len(LEVELS))),
            weights="quadratic",
        )
    )


def _library_alpha(data: RubricItems, moments_value: float, *, with_jury: bool) -> float:
    """The krippendorff package's alpha for the point estimate (same value as the sums)."""
    if not np.isfinite(moments_value):
        return np.nan
    reliability = data.scores.T
    if with_jury:
        reliability = np.vstack([reliability, round_half_up(data.jury)])
    return coefficients.library_alpha(reliability, level=ALPHA_LEVEL, values=VALUES)


def _library_spearman(data: RubricItems) -> float:
    paired = data.paired
    jury, mean = data.jury[paired], data.clinician_mean[paired]
    if paired.sum() < 2 or np.ptp(jury) == 0 or np.ptp(mean) == 0:
        return np.nan
    return float(scipy_stats.spearmanr(jury, mean).statistic)


def _confusion(data: RubricItems) -> tuple[list[list[int]], int]:
    paired = data.paired
    table = np.zeros((len(LEVELS), len(LEVELS)), dtype=int)
    rows, cols = score_levels(data.clinician_mean[paired]), score_levels(data.jury[paired])
    np.add.at(table, (rows, cols), 1)
    gaps = np.abs(data.jury[paired] - data.clinician_mean[paired])
    major = int(is_major(gaps).sum())
    return table.tolist(), major


# --- the public functions -----------------------------------------------------------------


def rubric_agreement(
    clinicians: pd.DataFrame,
    jury: pd.Series | None,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    design: pd.DataFrame | None = None,
) -> RubricAgreement:
    """All figures for one rubric. clinicians: item, rater, score (1-5); jury: jury mean by item
    (NaN for an incomplete jury), or None for a human-only rubric (realism, or no jury yet);
    design: item, weight, stratum for the population-weighted figures (None: the sample's).

    Never raises on data conditions (one annotator, no overlap, identical scores, missing jury):
    those figures come back undefined with the reason. Raises ValueError on a malformed table
    (a design table must give every rated item a positive weight)."""
    data = rubric_items(clinicians, jury)
    if design is None:
        batch = sample_batch(len(data.items), resamples, seed)
    else:
        weights, strata = design_for(data.items, design)
        batch = weighted_batch(weights, strata, resamples, seed)
    columns = ItemColumns(len(data.items))
    jury_values, mean_values = _jury_columns(columns, data)
    _human_columns(columns, data)
    pairs = _pair_columns(columns, data)
    counts, sums = batch.sums(columns)
    reasons = _Reasons(data)
    library = not batch.weighted  # the packages' point estimates take no weights

    figures = {
        **_jury_figures(sums, counts, jury_values, mean_values, reasons),
        **_human_figures(sums, counts, reasons),
    }
    alpha_jury = (
        _alpha_with_jury(sums, counts, reasons) if data.has_jury else undefined(reasons.jury)
    )
    figures["alpha_with_jury"] = alpha_jury
    if library:
        figures["alpha_clinicians"] = _with_point(
            figures["alpha_clinicians"],
            _library_alpha(data, _value(figures["alpha_clinicians"]), with_jury=False),
        )
        figures["alpha_with_jury"] = _with_point(
            alpha_jury, _library_alpha(data, _value(alpha_jury), with_jury=True)
        )
    figures["spearman"] = _spearman(batch, data, reasons)
    confusion, major = _confusion(data)
    return RubricAgreement(
        **figures,
        kappa_pairs=_kappa_pairs(sums, counts, data, pairs, library=library),
        confusion=confusion,
        major_disagreements=major,
        n_items=len(data.items),
        n_ratings=int(data.ratings_per_item.sum()),
        n_raters=len(data.raters),
        n_items_without_jury=int(np.isnan(data.jury).sum()),
        n_jury_items_unrated=data.n_jury_items_unrated,
        resamples=resamples,
        seed=seed,
        weighted=batch.weighted,
        pooled_strata=batch.pooled,
    )


def _value(figure: Estimate) -> float:
    return np.nan if figure.value is None else figure.value


def _with_point(figure: Estimate, library_value: float) -> Estimate:
    """Swap in the library's point estimate (equal to ours up to rounding; tests check)."""
    if figure.value is None or not np.isfinite(library_value):
        return figure
    return replace(figure, value=library_value)


def _spearman(batch: Batch, data: RubricItems, reasons: _Reasons) -> Estimate:
    paired = data.paired
    values = coefficients.spearman_from_weights(
        batch.figure_rows,
        data.jury[paired],
        data.clinician_mean[paired],
        columns=np.flatnonzero(paired),
    )
    if not batch.weighted:
        values[0] = _library_spearman(data) if np.isfinite(values[0]) else np.nan
    return estimate(
        values,
        n_items=int(paired.sum()),
        n_ratings=int(data.ratings_per_item[paired].sum()),
        reason=reasons.varying("Spearman's rho"),
    )


def agreement_table(
    clinicians_long: pd.DataFrame,
    jury_long: pd.DataFrame,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    design_long: pd.DataFrame | None = None,
) -> dict[str, RubricAgreement]:
    """rubric_agreement for every rubric in either table (a rubric only the jury scored comes
    back with n_items 0 and its jury items counted as unrated). A rubric absent from jury_long
    gets the human-only figures. With design_long (item, rubric, weight, stratum) every figure
    is population-weighted."""
    check_ratings(clinicians_long, who="clinician", key=RATER, extra=(RUBRIC,))
    for column in (ITEM, RUBRIC, JURY):
        if column not in jury_long.columns:
            raise ValueError(
                f"jury table lacks column {column!r}; it has {list(jury_long.columns)}"
            )
    rubrics = pd.unique(pd.concat([clinicians_long[RUBRIC], jury_long[RUBRIC]], ignore_index=True))
    clinicians_by_rubric = dict(tuple(clinicians_long.groupby(RUBRIC, sort=False)))
    jury_by_rubric = dict(tuple(jury_long.groupby(RUBRIC, sort=False)))
    designs = {} if design_long is None else dict(tuple(design_long.groupby(RUBRIC, sort=False)))
    empty = clinicians_long.iloc[0:0]
    empty_design = None if design_long is None else design_long.iloc[0:0]
    table = {}
    for rubric in rubrics:
        jury_rows = jury_by_rubric.get(rubric)
        jury = None if jury_rows is None else jury_rows.set_index(ITEM)[JURY]
        table[rubric] = rubric_agreement(
            clinicians_by_rubric.get(rubric, empty),
            jury,
            resamples=resamples,
            seed=seed,
            design=designs.get(rubric, empty_design),
        )
    return table
