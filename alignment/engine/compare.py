"""Two jury configurations scored on the same study: is one closer to the clinicians?

A paired bootstrap: each resample draws conversations with replacement and computes the
figure for both juries on the same draw, so the interval is for the difference itself and the
shared noise of which conversations happened to be annotated cancels out. Only conversations
that the clinicians rated and both juries scored completely enter (n_items says how many).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from alignment.engine import coefficients
from alignment.engine.agreement import ALPHA_LEVEL, VALUES
from alignment.engine.bootstrap import (
    RESAMPLES,
    Estimate,
    estimate,
    ratio,
    resample_weights,
    undefined,
    with_point,
)
from alignment.engine.frames import LEVELS
from alignment.engine.items import ItemColumns, one_hot, rubric_items, score_levels
from jury.engine.score_gaps import is_adjacent

METRICS = ("adjacent", "exact", "alpha_with_jury", "mean_signed_diff", "mean_abs_diff")


def paired_difference(
    clinicians: pd.DataFrame,
    jury_a: pd.Series,
    jury_b: pd.Series,
    *,
    metric: str,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """metric(jury_a) - metric(jury_b) with a paired 95% bootstrap interval, for one rubric.

    clinicians: item, rater, score; jury_a / jury_b: jury means by item. metric is one of
    METRICS (an unknown one raises ValueError); positive means jury_a scores higher on it."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    data = rubric_items(clinicians, jury_a)
    other = rubric_items(clinicians, jury_b).jury
    both = data.paired & ~np.isnan(other)
    n_items, n_ratings = int(both.sum()), int(data.ratings_per_item[both].sum())
    if n_items == 0:
        return undefined(
            "no conversation has clinician scores and complete scores from both juries",
            n_ratings=n_ratings,
        )
    mean, counts = data.clinician_mean[both], data.counts[both]
    columns = ItemColumns(n_items)
    for name, jury in (("a", data.jury[both]), ("b", other[both])):
        _add_metric_columns(columns, name, metric, jury, mean, counts)
    weights = with_point(resample_weights(n_items, resamples, np.random.default_rng(seed)))
    sums = columns.sums(weights)
    difference = _metric(sums, "a", metric) - _metric(sums, "b", metric)
    return estimate(
        difference,
        n_items=n_items,
        n_ratings=n_ratings,
        reason="alpha is undefined for at least one jury: every rating is the same score",
    )


def _add_metric_columns(
    columns: ItemColumns,
    name: str,
    metric: str,
    jury: np.ndarray,
    mean: np.ndarray,
    counts: np.ndarray,
) -> None:
    gap = jury - mean
    if metric == "alpha_with_jury":
        every_jury_score = np.ones(len(jury), dtype=bool)
        with_jury = counts + one_hot(score_levels(jury), len(LEVELS), every_jury_score)
        columns.add(name, coefficients.coincidence_columns(with_jury))
        return
    per_item = {
        "adjacent": is_adjacent(gap),
        "exact": score_levels(jury) == score_levels(mean),
        "mean_signed_diff": gap,
        "mean_abs_diff": np.abs(gap),
    }[metric]
    columns.add(name, np.column_stack([np.ones(len(jury)), per_item]))


def _metric(sums: dict[str, np.ndarray], name: str, metric: str) -> np.ndarray:
    block = sums[name]
    if metric == "alpha_with_jury":
        return coefficients.alpha_from_sums(block, level=ALPHA_LEVEL, values=VALUES)
    return ratio(block[:, 1], block[:, 0])
