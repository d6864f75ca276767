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

Pairwise judging with no rubric gives a preference per order; `pairwise_scores` turns the two
orders into one averaged score per response, and `position_bias` shows how much showing the
reference first moved the verdict.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
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

    def as_row(self) -> dict[str, float]:
        row: dict[str, float] = {"n": self.n}
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
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Sensitivity:
    """Win rate, tie rate, mean delta and AUROC, each with its bootstrap percentile interval."""
    reference, perturbed = _paired(reference, perturbed)
    n = len(reference)
    if n == 0:
        raise ValueError("sensitivity needs at least one scored pair")
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
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> PositionBias:
    """How much showing the reference first changed the verdict; 0 means no position bias.
    An unbiased judge prefers the first response half the time when it cannot tell."""
    first, second = _paired(reference_first, reference_second)
    if len(first) == 0:
        raise ValueError("position bias needs at least one pair judged in both orders")
    rows = resample_indices(len(first), resamples=resamples, seed=seed)
    draws = (first[rows] - second[rows]).mean(axis=1)
    return PositionBias(
        n=len(first),
        reference_first=float(first.mean()),
        reference_second=float(second.mean()),
        first_preferred=float((first.mean() + (1 - second).mean()) / 2),
        bias=_estimate(float((first - second).mean()), draws, confidence),
    )
