"""Item bootstrap: resampling conversations with replacement, as index arithmetic.

Every agreement figure here is a function of sums over items (counts of hits, coincidence
tables, moments). A resample is therefore a vector of how many times each item was drawn, and
the sums of every resample at once are one matrix product: `weights @ per_item_columns`. That
is how a 1,200-item rubric gets 1,000 resamples of every figure in a fraction of a second.

Intervals are percentile intervals (2.5th and 97.5th percentiles of the resampled figure), so
they stay on the figure's scale (a share on 0-100%, a coefficient at most 1). A resample in
which a figure is undefined (e.g. it drew no item with two ratings) is left out of that
figure's interval, and the Estimate says on how many resamples the interval rests. An interval
of zero width says why (jury.engine.intervals): one conversation, or every conversation alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from jury.engine.intervals import interval_note

RESAMPLES = 1000
CONFIDENCE = 0.95
SAME_IN_EVERY_RESAMPLE = "every resample of the conversations gives the same figure"


@dataclass(frozen=True)
class Estimate:
    """One figure with its 95% bootstrap interval and the counts it rests on.

    value is None when the figure cannot be computed; `undefined` then says why. low/high are
    None when there is no interval (no resamples asked, or fewer than two resamples where the
    figure was defined). n_items: items (conversations) entering the figure; n_ratings: the
    ratings on those items (clinician ratings; judge scores for the judge-vs-judge figures).
    resamples: bootstrap resamples the interval rests on. note: what a reader must know about
    the interval - why it is missing or of zero width, or that it was cut at the end of the
    scale - shown beside it ("" when nothing)."""

    value: float | None
    low: float | None
    high: float | None
    n_items: int
    n_ratings: int
    undefined: str = ""
    resamples: int = 0
    note: str = ""


def undefined(reason: str, *, n_items: int = 0, n_ratings: int = 0) -> Estimate:
    return Estimate(None, None, None, int(n_items), int(n_ratings), undefined=reason)


def one_blas_thread() -> None:
    """numpy's matrix products run on one thread from now on, in this whole process.

    The resample sums are many products of a few milliseconds each; spread over the cores,
    the BLAS threads spend more CPU waiting for each other than they save, and on a shared
    server they take cores from the other requests and workers (issue 34: the report of a
    3,000-conversation study took a third more CPU with them). The limit is the process's
    (threadpoolctl), so it is set once and never restored: a limit set and restored around
    each report would undo another thread's report in a threaded web or worker process."""
    global _blas_limited
    if not _blas_limited:
        threadpool_limits(limits=1, user_api="blas")
        _blas_limited = True


_blas_limited = False


def resample_weights(n_items: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(resamples, n_items) matrix: how often each item was drawn in each resample."""
    if n_items == 0 or resamples == 0:
        return np.zeros((resamples, n_items))
    draws = rng.integers(0, n_items, size=(resamples, n_items))
    offsets = np.arange(resamples)[:, None] * n_items
    counts = np.bincount((draws + offsets).ravel(), minlength=resamples * n_items)
    return counts.reshape(resamples, n_items).astype(float)


def with_point(weights: np.ndarray) -> np.ndarray:
    """Prepend the full sample (every item once) as row 0, so point and resamples share code."""
    return np.vstack([np.ones((1, weights.shape[1])), weights])


def estimate(
    values: np.ndarray,
    *,
    n_items: int,
    n_ratings: int,
    reason: str,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """Estimate from `values`: row 0 the point estimate, the rest its bootstrap replicates.

    `reason` is reported when the point estimate is not finite."""
    values = np.asarray(values, dtype=float)
    point = values[0]
    if not np.isfinite(point):
        return undefined(reason, n_items=n_items, n_ratings=n_ratings)
    replicates = values[1:][np.isfinite(values[1:])]
    if replicates.size < 2:
        return Estimate(
            float(point), None, None, int(n_items), int(n_ratings), "", int(replicates.size)
        )
    tail = (1 - confidence) / 2 * 100
    low, high = (float(bound) for bound in np.percentile(replicates, [tail, 100 - tail]))
    note = interval_note(int(n_items), low, high, same=SAME_IN_EVERY_RESAMPLE)
    return Estimate(
        float(point), low, high, int(n_items), int(n_ratings), "", int(replicates.size), note
    )


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is zero (nothing to average)."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    out = np.full(np.broadcast(numerator, denominator).shape, np.nan)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out
