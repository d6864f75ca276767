"""Figures of the fidelity review: how often the simulated patient played its part, by group,
and how the reviewer's verdicts line up with clinicians' realism scores. Pure functions on
DataFrames; every interval says what it is on.

A conversation is *faithful* when the reviewer found no error in it. Conversations of one case
share a record and a scenario (repetitions), so they are not independent: a rate's Wilson
interval is taken on the effective number of conversations (n over the design effect of the
case clusters), exactly n with one conversation per case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from common.proportions import wilson_interval

CONFIDENCE = 0.95
RESAMPLES = 2000
# A conversation clinicians found unrealistic: mean realism at or below this (1-5 scale).
UNREALISTIC_AT_MOST = 2.0


def effective_n(values: np.ndarray, clusters: np.ndarray) -> float:
    """The number of independent conversations a share of `values` (0/1) is worth once its
    case clusters are allowed for: n / deff, deff = cluster-robust variance of the mean over
    the variance with every conversation its own cluster (at least 1). With every value
    alike, or fewer than two clusters, the number of clusters."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    groups = pd.Series(values - values.mean()).groupby(np.asarray(clusters)).sum()
    count = len(groups)
    if n < 2 or count < 2:
        return float(count)
    p = values.mean()
    independent = p * (1 - p) / (n - 1)
    if independent == 0:
        return float(count)
    clustered = count / (count - 1) * float((groups**2).sum()) / n**2
    return n / max(clustered / independent, 1.0)


def fidelity_rates(
    reviews: pd.DataFrame, by: str | None = None, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """Per value of `by` (or overall, index "all"): n reviewed conversations, cases, faithful
    conversations, the fidelity rate (faithful / n) and its Wilson bounds on the effective n.

    `reviews` has one row per reviewed conversation: `case`, `flagged` (bool) and the column
    `by`. A group with no conversation has no row: its rate is undefined, not 0 or 1."""
    keys = reviews[by] if by else pd.Series("all", index=reviews.index)
    rows = {}
    for group, part in reviews.groupby(keys, sort=True):
        faithful = (~part["flagged"].astype(bool)).to_numpy(dtype=float)
        size = effective_n(faithful, part["case"].to_numpy())
        rate = faithful.mean()
        low, high = wilson_interval(rate * size, size, confidence)
        rows[group] = {
            "n": len(part),
            "cases": part["case"].nunique(),
            "faithful": int(faithful.sum()),
            "rate": float(rate),
            "low": low,
            "high": high,
        }
    columns = ["n", "cases", "faithful", "rate", "low", "high"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns)


def kind_counts(findings: pd.DataFrame, kinds: list[str]) -> pd.DataFrame:
    """Per error kind (in `kinds` order, then any other stored kind): findings and the
    conversations with at least one. `findings` has one row per finding: `kind`,
    `conversation`."""
    extra = sorted(set(findings["kind"]) - set(kinds)) if len(findings) else []
    grouped = findings.groupby("kind")
    table = pd.DataFrame(
        {"findings": grouped.size(), "conversations": grouped["conversation"].nunique()}
    )
    return table.reindex(kinds + extra, fill_value=0).astype(int)


@dataclass(frozen=True)
class Comparison:
    """A figure with its interval, or why it is undefined (`reason`)."""

    estimate: float
    low: float
    high: float
    n: int
    reason: str = ""

    @property
    def defined(self) -> bool:
        return not self.reason


def _undefined(reason: str, n: int) -> Comparison:
    return Comparison(math.nan, math.nan, math.nan, n, reason)


def realism_gap(
    pairs: pd.DataFrame, *, resamples: int = RESAMPLES, seed: int = 0, confidence=CONFIDENCE
) -> dict:
    """Mean clinicians' realism of reviewer-flagged minus unflagged conversations, with a
    percentile bootstrap interval (conversations resampled within each group). `pairs`: one
    row per conversation with `flagged` and `realism` (its clinicians' mean, 1-5). A
    reviewer that finds real errors should show a negative gap."""
    flagged = pairs.loc[pairs["flagged"].astype(bool), "realism"].to_numpy(dtype=float)
    clean = pairs.loc[~pairs["flagged"].astype(bool), "realism"].to_numpy(dtype=float)
    means = {"flagged_mean": _mean(flagged), "unflagged_mean": _mean(clean)}
    if not len(flagged) or not len(clean):
        reason = "needs rated conversations both flagged and not flagged"
        return {**means, "gap": _undefined(reason, len(pairs))}
    rng = np.random.default_rng(seed)
    draws = _resampled_means(flagged, resamples, rng) - _resampled_means(clean, resamples, rng)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    estimate = flagged.mean() - clean.mean()
    return {**means, "gap": Comparison(float(estimate), float(low), float(high), len(pairs))}


def verdict_agreement(
    pairs: pd.DataFrame,
    *,
    unrealistic_at_most: float = UNREALISTIC_AT_MOST,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict:
    """How often the reviewer's verdict (flagged) matches the clinicians' (mean realism at or
    below `unrealistic_at_most`): the share of conversations where they agree, with its
    Wilson interval, and Cohen's kappa (agreement beyond chance) with a percentile bootstrap
    interval over conversations. Kappa is undefined when both sides give one and the same
    verdict throughout (chance agreement is then 1)."""
    reviewer = pairs["flagged"].astype(bool).to_numpy()
    clinicians = pairs["realism"].to_numpy(dtype=float) <= unrealistic_at_most
    n = len(pairs)
    if not n:
        empty = _undefined("no conversation has both a review and a realism score", 0)
        return {"agreement": empty, "kappa": empty}
    agree = int((reviewer == clinicians).sum())
    low, high = wilson_interval(agree, n, confidence)
    agreement = Comparison(agree / n, low, high, n)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    point = _kappa(reviewer[None, :], clinicians[None, :])[0]
    if not np.isfinite(point):
        reason = "reviewer and clinicians gave one and the same verdict throughout"
        return {"agreement": agreement, "kappa": _undefined(reason, n)}
    draws = _kappa(reviewer[picks], clinicians[picks])
    tail = (1 - confidence) / 2 * 100
    k_low, k_high = np.nanpercentile(draws, [tail, 100 - tail])
    return {"agreement": agreement, "kappa": Comparison(float(point), k_low, k_high, n)}


def _kappa(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cohen's kappa of two boolean verdicts, row by row (NaN when chance agreement is 1)."""
    observed = (a == b).mean(axis=1)
    pa, pb = a.mean(axis=1), b.mean(axis=1)
    chance = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def _resampled_means(values: np.ndarray, resamples: int, rng) -> np.ndarray:
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    return values[picks].mean(axis=1)


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None
