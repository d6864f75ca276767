"""Weighting the study sample back to the population of scored conversations.

The sample over-represents what the sampler was built to find (extremes, every jury bin of
every model), so a plain average over it answers "how well on the conversations we chose",
not "how well on the conversations the benchmark produced". Each sampled conversation carries
its inclusion probability pi (annotation.engine.sampling: the chance it entered the sample
through any of its cells) and so a weight w = 1 / pi, the number of conversations of the
population it stands for.

- Hajek estimate of a share: sum(w * hit) / sum(w); every other figure (alpha, kappa, ICC,
  Spearman, the chance baselines) is computed from the same per-conversation sums as on the
  sample, with each conversation's columns counted w times instead of once. The weights are
  first scaled to average 1 over the figure's conversations: a share or a mean is unchanged
  by the scale, and the small-sample terms of alpha and the ICC (their n - 1) then count the
  conversations actually annotated rather than the population's, so equal weights give the
  sample's figures exactly. With whole-number weights every share and mean (and kappa, AC2,
  Spearman) is the sample figure of the data with each conversation repeated w times.
- Intervals: a stratified bootstrap. Each resample draws, within every stratum, as many
  conversations as the stratum holds, with replacement, and keeps their weights; the stratum
  of a conversation is its design stratum (the sampler's, annotation.engine.sampling), or for
  a study drawn before that design its cell of the figure's rubric (model x that rubric's jury
  bin). A stratum holding a single conversation of the figure has nothing to resample within
  and no spread to measure, so such strata are pooled into one (and a lone pooled
  conversation joins the smallest other stratum); `Pooling.note` says which, and every
  weighted figure carries that note to its table.

As everywhere in the engine, a resample is a vector of draw counts and the sums of every
resample are one matrix product; here the rows are draw counts times weights. Row 0 of a batch
counts every conversation once, so the figures' n stay the numbers of conversations and ratings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from alignment.engine.bootstrap import resample_weights
from alignment.engine.frames import ITEM, STRATUM, WEIGHT
from alignment.engine.items import ItemColumns, WholeRows, whole_rows

POOLING_REASON = "a stratum needs two conversations to resample within and show its spread"


@dataclass(frozen=True)
class Batch:
    """Weight rows for one ItemColumns.sums call: row 0 counts each item once (for n), row 1
    gives the point estimate, rows 2.. the bootstrap replicates."""

    matrix: np.ndarray
    weighted: bool
    pooled: str = ""  # Pooling.note of the strata the bootstrap resampled within
    # The plain bootstrap's rows are whole numbers: the same rows in single precision, and
    # their largest, let ItemColumns.sums take the whole-number columns at twice the speed.
    whole: WholeRows | None = None

    def sums(self, columns: ItemColumns) -> tuple[dict, dict]:
        """(counts, figures) of every column of `columns` under these rows."""
        return self.split(columns.sums(self.matrix, whole=self.whole))

    def split(self, sums: dict[str, np.ndarray]) -> tuple[dict, dict]:
        """(counts, figures): the counting row, and the point + replicate rows."""
        return {k: v[:1] for k, v in sums.items()}, {k: v[1:] for k, v in sums.items()}

    @property
    def figure_rows(self) -> np.ndarray:
        return self.matrix[1:]


def sample_batch(n_items: int, resamples: int, seed: int) -> Batch:
    """The plain item bootstrap: every item once for the point, draw counts for resamples."""
    matrix, whole = _sample_matrix(n_items, resamples, seed)
    return Batch(matrix, weighted=False, whole=whole)


# A report asks for the same matrix once per rubric, judge pair and figure (29 times in a
# study of nine rubrics); building it (a float copy of every draw) cost more than some of the
# figures. Two kept: a report's sample, and one other size (a filtered or sliced figure).
@lru_cache(maxsize=2)
def _sample_matrix(n_items: int, resamples: int, seed: int) -> tuple[np.ndarray, WholeRows]:
    counts = _draws(resample_weights, n_items, resamples, seed)
    matrix = np.vstack([np.ones((2, n_items)), counts])
    matrix.flags.writeable = False
    return matrix, whole_rows(matrix)


def weighted_batch(weights: np.ndarray, strata: np.ndarray, resamples: int, seed: int) -> Batch:
    """Hajek point (the weights) and the stratified bootstrap (draw counts within pooled
    strata, times the weights)."""
    weights = np.asarray(weights, dtype=float)
    weights = weights / weights.mean() if len(weights) else weights
    pooling = strata_pooling(strata)
    counts = _stratified_draws(pooling.codes.tobytes(), len(pooling.codes), resamples, seed)
    matrix = np.vstack([np.ones((1, len(weights))), weights[None, :], counts * weights])
    return Batch(matrix, weighted=True, pooled=pooling.note)


# The same seed draws the same resamples for every rubric, judge pair and figure of a report
# (as the engine always did); drawing them once saves most of the random-number work. Counts
# are kept as small integers, so the cache holds a few megabytes.
@lru_cache(maxsize=8)
def _draws(draw, n_items: int, resamples: int, seed: int) -> np.ndarray:
    """Draw counts from `draw` (part of the key, so a substitute is never served another's)."""
    counts = draw(n_items, resamples, np.random.default_rng(seed))
    return _frozen(counts)


@lru_cache(maxsize=8)
def _stratified_draws(codes: bytes, n_items: int, resamples: int, seed: int) -> np.ndarray:
    strata = np.frombuffer(codes, dtype=int)
    return _frozen(stratified_resample_weights(strata, resamples, np.random.default_rng(seed)))


def forget_draws() -> None:
    """Empty the cache of resample draws (a benchmark's cold start)."""
    _draws.cache_clear()
    _stratified_draws.cache_clear()
    _sample_matrix.cache_clear()


def _frozen(counts: np.ndarray) -> np.ndarray:
    small = counts.astype(np.int32 if counts.size and counts.max() > 32000 else np.int16)
    small.flags.writeable = False
    return small


@dataclass(frozen=True)
class Pooling:
    """A figure's strata as its interval uses them: codes per conversation, with the strata
    that held a single conversation pooled."""

    codes: np.ndarray
    lone: tuple[str, ...] = ()  # the strata that held one conversation of the figure
    joined: str = ""  # the stratum a single lone conversation joined ("" when pooled together)

    @property
    def note(self) -> str:
        """Which strata were pooled and why, for the figure's table ("" when none were)."""
        if not self.lone:
            return ""
        if self.joined:
            return (
                f"stratum {self.lone[0]} held one conversation and was resampled with "
                f"stratum {self.joined} ({POOLING_REASON})"
            )
        return (
            f"{len(self.lone)} strata held one conversation each and were pooled into one "
            f"({POOLING_REASON}): {'; '.join(self.lone)}"
        )


def pooled_strata(strata) -> np.ndarray:
    """Stratum codes with the single-conversation strata pooled (`strata_pooling`)."""
    return strata_pooling(strata).codes


def strata_pooling(strata) -> Pooling:
    """Stratum codes with the single-conversation strata pooled into one; a pool that would
    still hold one conversation joins the smallest other stratum (when there is one)."""
    codes, labels = pd.factorize(pd.Series([str(s) for s in strata], dtype=object), sort=True)
    codes = codes.astype(int)
    sizes = np.bincount(codes) if len(codes) else np.zeros(0, dtype=int)
    lone = sizes[codes] == 1
    if lone.sum() == 0:
        return Pooling(codes)
    names = tuple(str(labels[code]) for code in np.flatnonzero(sizes == 1))
    pooled = codes.copy()
    if lone.sum() > 1:
        pooled[lone] = len(sizes)
        return Pooling(pooled, names)
    others = np.where(sizes == 1, np.iinfo(int).max, sizes)
    if len(codes) == 1:  # one conversation in all: nothing to pool it with
        return Pooling(codes)
    target = int(np.argmin(others))
    pooled[lone] = target
    return Pooling(pooled, names, str(labels[target]))


def stratified_resample_weights(
    strata: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """(resamples, n_items) draw counts: each resample draws, for every item's slot, an item
    of the same stratum, so every stratum keeps its size."""
    strata = np.asarray(strata)
    n_items = len(strata)
    if n_items == 0 or resamples == 0:
        return np.zeros((resamples, n_items))
    order = np.argsort(strata, kind="stable")
    ordered = strata[order]
    starts = np.searchsorted(ordered, ordered, side="left")
    sizes = np.searchsorted(ordered, ordered, side="right") - starts
    slots = starts + np.floor(rng.random((resamples, n_items)) * sizes).astype(int)
    drawn = order[np.minimum(slots, n_items - 1)]
    offsets = np.arange(resamples)[:, None] * n_items
    counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * n_items)
    return counts.reshape(resamples, n_items).astype(float)


def design_for(items: np.ndarray, design: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(weights, strata) aligned with `items`, from a table of ITEM, WEIGHT, STRATUM; every
    item needs a positive finite weight (the caller leaves weighting out otherwise)."""
    missing = [c for c in (ITEM, WEIGHT, STRATUM) if c not in design.columns]
    if missing:
        raise ValueError(f"design table lacks column(s) {missing}; it has {list(design.columns)}")
    if design[ITEM].duplicated().any():
        raise ValueError("the design table lists an item twice")
    table = design.set_index(ITEM)
    weights = pd.to_numeric(table[WEIGHT], errors="coerce").reindex(items).to_numpy(dtype=float)
    bad = ~np.isfinite(weights) | (weights <= 0)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} item(s) have no positive weight in the design table")
    return weights, table[STRATUM].reindex(items).to_numpy(dtype=object)


def intervals_disjoint(first, second) -> bool:
    """Whether two estimates' intervals do not overlap: the sample and the population figure
    then differ by more than their uncertainty (both need an interval)."""
    if None in (first.low, first.high, second.low, second.high):
        return False
    return first.high < second.low or second.high < first.low


def hajek_mean(values: np.ndarray, weights: np.ndarray) -> float:
    """sum(w * y) / sum(w): the design-weighted mean of the sampled values."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    return float((weights * values).sum() / weights.sum())


def design_variance(values: np.ndarray, weights: np.ndarray, strata) -> float:
    """The design variance of the Hajek mean by linearization, strata sampled with
    replacement (no finite-population correction, so it errs wide where a cell was taken
    whole): z_i = w_i (y_i - mean) / sum(w), v = sum_h n_h / (n_h - 1) sum_i (z_i - mean_h z)^2.
    Strata as in the bootstrap (strata of one conversation pooled: `strata_pooling`); NaN for
    one conversation.
    The standard survey estimator: samplics' TaylorEstimator gives the same number."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    if len(values) < 2:
        return float("nan")
    z = weights * (values - hajek_mean(values, weights)) / weights.sum()
    codes = pooled_strata(strata)
    total = 0.0
    for code in np.unique(codes):
        part = z[codes == code]
        if len(part) < 2:
            return float("nan")
        total += len(part) / (len(part) - 1) * ((part - part.mean()) ** 2).sum()
    return float(total)
