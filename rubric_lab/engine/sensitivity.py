"""Discriminative sensitivity of a judge setup: references against their near-miss copies.

Input is paired: for each case, the score of the reference and the score of its perturbed copy
(same judge setup). Reported, each with a 95% percentile interval from 1,000 nonparametric
bootstrap resamples of the pairs (seeded, so a study reproduces exactly):

- win rate: share of pairs whose reference scored strictly higher;
- tie rate: share of pairs scored equal;
- mean delta: mean of (reference - perturbed);
- AUROC: how well the score separates references (positive class) from perturbed copies,
  ties counting one half (scikit-learn's roc_auc_score for the estimate; the same quantity
  through ranks, vectorised over the resamples, for the interval).

Pairs are not always independent: pooled over perturbation types, each reference appears once
per type, so its pairs share the reference's score. Resampling pairs would then treat one
reference's five pairs as five independent cases and make the intervals too narrow. Given
`clusters` (the reference of each pair), the bootstrap draws references with replacement,
each with all its pairs (a clustered bootstrap). Within one type every reference has one pair,
and the two bootstraps are the same procedure.

Pairwise judging with no rubric gives a preference per order; `pairwise_scores` turns the two
orders into one averaged score per response, and `position_bias` shows how much showing the
reference first moved the verdict.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score

RESAMPLES = 1000
CONFIDENCE = 0.95
MEASURES = ("win_rate", "tie_rate", "mean_delta", "auroc")


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Sensitivity:
    n: int
    win_rate: Estimate
    tie_rate: Estimate
    mean_delta: Estimate
    auroc: Estimate
    clusters: int | None = None  # references resampled (clustered bootstrap); None: pairs

    def as_row(self) -> dict[str, float]:
        row: dict[str, float] = {"n": self.n}
        if self.clusters is not None:
            row["references"] = self.clusters
        for measure in MEASURES:
            estimate = asdict(getattr(self, measure))
            row.update({f"{measure}{suffix}": estimate[key] for key, suffix in _SUFFIXES})
        return row


_SUFFIXES = (("value", ""), ("low", "_low"), ("high", "_high"))


def resample_indices(n: int, *, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """Row r holds the pair indices of bootstrap resample r (drawn with replacement)."""
    return np.random.default_rng(seed).integers(0, n, (resamples, n))


def auroc(reference: Sequence[float], perturbed: Sequence[float]) -> float:
    reference, perturbed = _paired(reference, perturbed)
    labels = np.r_[np.ones(len(reference)), np.zeros(len(perturbed))]
    return float(roc_auc_score(labels, np.r_[reference, perturbed]))


def auroc_rows(reference: np.ndarray, perturbed: np.ndarray) -> np.ndarray:
    """AUROC of each row (a resample): the Mann-Whitney U of the references over n * n."""
    n = reference.shape[1]
    ranks = rankdata(np.concatenate([reference, perturbed], axis=1), axis=1)
    return (ranks[:, :n].sum(axis=1) - n * (n + 1) / 2) / (n * n)


def sensitivity(
    reference: Sequence[float],
    perturbed: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Sensitivity:
    """Win rate, tie rate, mean delta and AUROC, each with its bootstrap percentile interval:
    resampling pairs, or whole clusters of pairs when `clusters` names each pair's cluster."""
    reference, perturbed = _paired(reference, perturbed)
    n = len(reference)
    if n == 0:
        raise ValueError("sensitivity needs at least one scored pair")
    if clusters is not None:
        return _clustered(reference, perturbed, clusters, resamples, seed, confidence)
    rows = resample_indices(n, resamples=resamples, seed=seed)
    ref_draws, pert_draws = reference[rows], perturbed[rows]
    deltas = ref_draws - pert_draws
    return Sensitivity(
        n=n,
        win_rate=_estimate(np.mean(reference > perturbed), np.mean(deltas > 0, axis=1), confidence),
        tie_rate=_estimate(
            np.mean(reference == perturbed), np.mean(deltas == 0, axis=1), confidence
        ),
        mean_delta=_estimate(np.mean(reference - perturbed), deltas.mean(axis=1), confidence),
        auroc=_estimate(auroc(reference, perturbed), auroc_rows(ref_draws, pert_draws), confidence),
    )


def cluster_weights(
    clusters: Sequence[Hashable], *, resamples: int = RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Row r: how many times each pair is drawn in resample r of the clustered bootstrap.

    Clusters are numbered in the order they first appear; resample r draws that many cluster
    numbers with replacement (`rng.integers(0, k, (resamples, k))`), and every pair of a
    cluster drawn m times is drawn m times."""
    numbers = {label: number for number, label in enumerate(dict.fromkeys(clusters))}
    of_pair = np.array([numbers[label] for label in clusters])
    k = len(numbers)
    draws = np.random.default_rng(seed).integers(0, k, (resamples, k))
    offsets = (draws + k * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(offsets, minlength=resamples * k).reshape(resamples, k)
    return counts[:, of_pair].astype(float)


def weighted_auroc_rows(
    reference: np.ndarray, perturbed: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """AUROC of each row of `weights` (R x pairs), each pair counted with its weight on both
    sides: sum over (i, j) of w_i w_j ([r_i > p_j] + [r_i = p_j] / 2) / (sum of w)^2."""
    levels, codes = np.unique(np.r_[reference, perturbed], return_inverse=True)
    reference_level, perturbed_level = codes[: len(reference)], codes[len(reference) :]
    rows, count = weights.shape[0], len(levels)
    offsets = (perturbed_level[None, :] + count * np.arange(rows)[:, None]).ravel()
    at_level = np.bincount(offsets, weights=weights.ravel(), minlength=rows * count)
    at_level = at_level.reshape(rows, count)
    below = np.cumsum(at_level, axis=1) - at_level
    beaten = below[:, reference_level] + at_level[:, reference_level] / 2
    return (weights * beaten).sum(axis=1) / weights.sum(axis=1) ** 2


def _clustered(reference, perturbed, clusters, resamples, seed, confidence) -> Sensitivity:
    if len(clusters) != len(reference):
        raise ValueError("clusters must name one cluster per pair")
    weights = cluster_weights(clusters, resamples=resamples, seed=seed)
    totals = weights.sum(axis=1)
    deltas = reference - perturbed

    def weighted_mean(values: np.ndarray) -> np.ndarray:
        return weights @ values / totals

    return Sensitivity(
        n=len(reference),
        win_rate=_estimate(np.mean(deltas > 0), weighted_mean(deltas > 0), confidence),
        tie_rate=_estimate(np.mean(deltas == 0), weighted_mean(deltas == 0), confidence),
        mean_delta=_estimate(np.mean(deltas), weighted_mean(deltas), confidence),
        auroc=_estimate(
            auroc(reference, perturbed),
            weighted_auroc_rows(reference, perturbed, weights),
            confidence,
        ),
        clusters=len(set(clusters)),
    )


def percentile_interval(draws: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def _estimate(value: float, draws: np.ndarray, confidence: float) -> Estimate:
    low, high = percentile_interval(draws, confidence)
    return Estimate(float(value), low, high)


def _paired(reference, perturbed) -> tuple[np.ndarray, np.ndarray]:
    reference = np.asarray(reference, dtype=float)
    perturbed = np.asarray(perturbed, dtype=float)
    if reference.shape != perturbed.shape or reference.ndim != 1:
        raise ValueError("reference and perturbed scores must be two equal-length lists (pairs)")
    if not (np.isfinite(reference).all() and np.isfinite(perturbed).all()):
        raise ValueError("scores must be finite numbers")
    return reference, perturbed


# --- pairwise judging --------------------------------------------------------------------

# A pairwise verdict as the share of the preference that goes to the reference.
PREFERENCE = {"reference": 1.0, "tie": 0.5, "perturbed": 0.0}


def pairwise_scores(reference_first: float, reference_second: float) -> tuple[float, float]:
    """(reference score, perturbed score) from the reference's preference share when shown
    first and when shown second, averaged so that neither position is favoured."""
    share = (reference_first + reference_second) / 2
    return share, 1 - share


@dataclass(frozen=True)
class PositionBias:
    n: int
    reference_first: float  # mean preference share of the reference when shown first
    reference_second: float  # ... when shown second
    first_preferred: float  # share of verdicts going to whichever response came first
    bias: Estimate  # reference_first - reference_second, with its bootstrap interval


def position_bias(
    reference_first: Sequence[float],
    reference_second: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> PositionBias:
    """How much showing the reference first changed the verdict; 0 means no position bias.
    An unbiased judge prefers the first response half the time when it cannot tell."""
    first, second = _paired(reference_first, reference_second)
    if len(first) == 0:
        raise ValueError("position bias needs at least one pair judged in both orders")
    if clusters is None:
        rows = resample_indices(len(first), resamples=resamples, seed=seed)
        draws = (first[rows] - second[rows]).mean(axis=1)
    else:
        weights = cluster_weights(clusters, resamples=resamples, seed=seed)
        draws = weights @ (first - second) / weights.sum(axis=1)
    return PositionBias(
        n=len(first),
        reference_first=float(first.mean()),
        reference_second=float(second.mean()),
        first_preferred=float((first.mean() + (1 - second).mean()) / 2),
        bias=_estimate(float((first - second).mean()), draws, confidence),
    )
