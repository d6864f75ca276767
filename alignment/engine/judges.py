"""The jury's own judges: how they agree with each other, and whether they err together.

A jury of K judges is worth K independent opinions only if their mistakes are independent.
Here a judge errs on a conversation when its score is more than 1 point from the clinicians'
mean (the complement of adjacent agreement). For every pair of judges we report how often both
err on the same conversation against what independence predicts (the product of their error
rates on the conversations they share) and the correlation of their error indicators (phi).

Effective number of independent judges: K / (1 + (K - 1) rho), rho the mean phi over the
pairs where it is defined - the design effect of averaging K equally correlated opinions
(Kish 1965). rho is held within [0, 1], so the figure lies between 1 and K.

Every figure has a 95% bootstrap interval over conversations; n_ratings counts judge scores.
With a design table (item, weight, stratum) the figures are population-weighted, with the
bootstrap within sampling strata (design.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from alignment.engine import coefficients
from alignment.engine.agreement import ALPHA_LEVEL, VALUES
from alignment.engine.bootstrap import (
    RESAMPLES,
    Estimate,
    estimate,
    ratio,
)
from alignment.engine.design import design_for, sample_batch, weighted_batch
from alignment.engine.frames import ITEM, JUDGE, LEVELS, SCORE, check_ratings
from alignment.engine.items import ItemColumns
from jury.engine.score_gaps import is_adjacent

ERROR_DEFINITION = (
    "A judge errs on a conversation when its score is more than 1 point from the clinicians' "
    "mean score."
)


@dataclass(frozen=True)
class JudgeAlone:
    judge: object
    adjacent: Estimate  # share of conversations within 1 point of the clinician mean
    mean_signed_diff: Estimate  # judge - clinician mean


@dataclass(frozen=True)
class JudgePair:
    judge_a: object
    judge_b: object
    adjacent: Estimate  # |a - b| <= 1
    exact: Estimate  # a == b
    kappa: Estimate  # quadratic-weighted, labels 1-5
    both_wrong: Estimate  # share of shared conversations where both err
    both_wrong_if_independent: Estimate  # product of their error rates
    error_correlation: Estimate  # phi of the two error indicators


@dataclass(frozen=True)
class JudgeAgreement:
    judges: list[JudgeAlone] = field(default_factory=list)
    pairs: list[JudgePair] = field(default_factory=list)
    alpha_judges: Estimate | None = None  # ordinal Krippendorff among the judges
    effective_judges: Estimate | None = None
    n_judges: int = 0
    n_items: int = 0  # conversations with a clinician mean and at least one judge score
    n_items_without_clinicians: int = 0  # judged conversations no clinician rated
    resamples: int = 0
    seed: int = 0
    weighted: bool = False
    pooled_strata: str = ""  # which single-conversation strata the intervals pooled, and why


def judge_agreement(
    judges: pd.DataFrame,
    clinician_mean: pd.Series,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    design: pd.DataFrame | None = None,
) -> JudgeAgreement:
    """judges: item, judge, score (1-5) for one rubric; clinician_mean: by item (NaN = none);
    design: item, weight, stratum for population-weighted figures (None: the sample's)."""
    check_ratings(judges, who="judge", key=JUDGE)
    wide = judges.pivot(index=ITEM, columns=JUDGE, values=SCORE).astype(float)
    mean = pd.to_numeric(clinician_mean, errors="coerce").reindex(wide.index).to_numpy(float)
    known = ~np.isnan(mean)
    scores, mean = wide.to_numpy()[known], mean[known]
    names = list(wide.columns)
    columns = _columns(scores, mean)
    if design is None:
        batch = sample_batch(len(mean), resamples, seed)
    else:
        batch = weighted_batch(*design_for(wide.index[known].to_numpy(), design), resamples, seed)
    counts, sums = batch.sums(columns)
    pairs = [_pair(sums, counts, names, a, b) for a, b in combinations(range(len(names)), 2)]
    return JudgeAgreement(
        judges=[_alone(sums, counts, names, j) for j in range(len(names))],
        pairs=pairs,
        alpha_judges=_alpha(sums, counts, scores),
        effective_judges=_effective(sums, counts, scores, len(names)),
        n_judges=len(names),
        n_items=len(mean),
        n_items_without_clinicians=int((~known).sum()),
        resamples=resamples,
        seed=seed,
        weighted=batch.weighted,
        pooled_strata=batch.pooled,
    )


def _columns(scores: np.ndarray, mean: np.ndarray) -> ItemColumns:
    columns = ItemColumns(len(mean))
    has = ~np.isnan(scores)
    wrong = has & ~is_adjacent(np.nan_to_num(scores) - mean[:, None])
    for j in range(scores.shape[1]):
        gap = np.where(has[:, j], scores[:, j] - mean, 0.0)
        columns.add(f"judge {j}", np.column_stack([has[:, j], has[:, j] & ~wrong[:, j], gap]))
    for a, b in combinations(range(scores.shape[1]), 2):
        shared = has[:, a] & has[:, b]
        gap = np.abs(np.nan_to_num(scores[:, a]) - np.nan_to_num(scores[:, b]))
        wrong_a, wrong_b = shared & wrong[:, a], shared & wrong[:, b]
        block = [shared, shared & is_adjacent(gap), shared & (gap == 0), wrong_a, wrong_b]
        columns.add(f"pair {a} {b}", np.column_stack([*block, wrong_a & wrong_b]))
        columns.add(f"kappa {a} {b}", coefficients.kappa_columns(scores[:, a], scores[:, b]))
    counts = np.stack([(scores == level).sum(axis=1) for level in LEVELS], axis=1)
    columns.add("coincidences", coefficients.coincidence_columns(counts))
    columns.add("pairable", counts.sum(axis=1) >= 2)
    columns.add("pairable_scores", np.where(counts.sum(axis=1) >= 2, counts.sum(axis=1), 0))
    return columns


def _alone(sums: dict, counts: dict, names: list, j: int) -> JudgeAlone:
    block = sums[f"judge {j}"]
    n = int(counts[f"judge {j}"][0, 0])
    reason = "this judge scored no conversation the clinicians rated"

    def figure(values: np.ndarray) -> Estimate:
        return estimate(values, n_items=n, n_ratings=n, reason=reason)

    return JudgeAlone(
        names[j],
        adjacent=figure(ratio(block[:, 1], block[:, 0])),
        mean_signed_diff=figure(ratio(block[:, 2], block[:, 0])),
    )


def _phi(block: np.ndarray) -> np.ndarray:
    """Correlation of two 0/1 error indicators from (n, errors a, errors b, both) sums."""
    n, wrong_a, wrong_b, both = block[:, 0], block[:, 3], block[:, 4], block[:, 5]
    spread = wrong_a * (n - wrong_a) * wrong_b * (n - wrong_b)
    return ratio(n * both - wrong_a * wrong_b, np.sqrt(spread))


def _pair(sums: dict, counts: dict, names: list, a: int, b: int) -> JudgePair:
    block = sums[f"pair {a} {b}"]
    n = block[:, 0]
    shared = int(counts[f"pair {a} {b}"][0, 0])
    no_overlap = "these two judges share no conversation the clinicians rated"

    def figure(values: np.ndarray, reason: str = no_overlap) -> Estimate:
        return estimate(values, n_items=shared, n_ratings=2 * shared, reason=reason)

    return JudgePair(
        names[a],
        names[b],
        adjacent=figure(ratio(block[:, 1], n)),
        exact=figure(ratio(block[:, 2], n)),
        kappa=figure(
            coefficients.kappa_from_sums(sums[f"kappa {a} {b}"]),
            no_overlap if shared == 0 else "both judges gave one score throughout: kappa is 0/0",
        ),
        both_wrong=figure(ratio(block[:, 5], n)),
        both_wrong_if_independent=figure(ratio(block[:, 3], n) * ratio(block[:, 4], n)),
        error_correlation=figure(
            _phi(block),
            no_overlap
            if shared == 0
            else "a judge never errs (or always errs) here, so errors cannot correlate",
        ),
    )


def _alpha(sums: dict, counts: dict, scores: np.ndarray) -> Estimate:
    n = int(counts["pairable"][0, 0])
    reason = (
        "the jury has a single judge"
        if scores.shape[1] < 2
        else "no conversation has two judge scores"
        if n == 0
        else "every judge score is the same score, so alpha is 0/0"
    )
    values = coefficients.alpha_from_sums(sums["coincidences"], level=ALPHA_LEVEL, values=VALUES)
    return estimate(
        values, n_items=n, n_ratings=int(counts["pairable_scores"][0, 0]), reason=reason
    )


def _effective(sums: dict, counts: dict, scores: np.ndarray, k: int) -> Estimate:
    """K / (1 + (K - 1) rho) per resample, rho the mean defined phi held within [0, 1]."""
    pairs = list(combinations(range(k), 2))
    phis = np.column_stack([_phi(sums[f"pair {a} {b}"]) for a, b in pairs]) if pairs else None
    if phis is None:
        values = np.full(len(sums["pairable"]), np.nan)
    else:
        defined = np.isfinite(phis)
        rho = ratio(np.where(defined, phis, 0.0).sum(axis=1), defined.sum(axis=1))
        values = k / (1 + (k - 1) * np.clip(rho, 0.0, 1.0))
    reason = (
        "the jury has a single judge"
        if k < 2
        else "no pair of judges has a defined error correlation (a judge never or always errs)"
    )
    return estimate(
        values,
        n_items=int(counts["pairable"][0, 0]),
        n_ratings=int(counts["pairable_scores"][0, 0]),
        reason=reason,
    )
