"""One rubric's ratings as arrays, and per-item columns whose sums carry every figure.

`RubricItems` holds the items (conversations) of one rubric in a fixed order with each
clinician's score and the jury mean; `ItemColumns` collects named per-item columns and sums all
of them under bootstrap weights with one matrix product (see bootstrap.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from alignment.engine.bootstrap import ratio
from alignment.engine.frames import (
    ITEM,
    LEVELS,
    RATER,
    SCORE,
    check_jury,
    check_ratings,
    round_half_up,
)


@dataclass(frozen=True)
class RubricItems:
    """One rubric's conversations (rows) by clinicians (columns), plus the jury mean."""

    items: np.ndarray  # (N,) item ids, sorted
    raters: list
    scores: np.ndarray  # (N, R) float, NaN where a rater did not score the item
    jury: np.ndarray  # (N,) jury mean, NaN where missing
    n_jury_items_unrated: int
    has_jury: bool  # False when jury=None (human-only rubric)

    @property
    def counts(self) -> np.ndarray:
        """(N, 5): how many clinicians gave each score level on each item."""
        return np.stack([(self.scores == level).sum(axis=1) for level in LEVELS], axis=1)

    @property
    def ratings_per_item(self) -> np.ndarray:
        return (~np.isnan(self.scores)).sum(axis=1)

    @property
    def clinician_mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return ratio(np.nansum(self.scores, axis=1), self.ratings_per_item)

    @property
    def paired(self) -> np.ndarray:
        """Items with both a jury mean and at least one clinician rating."""
        return ~np.isnan(self.jury) & (self.ratings_per_item > 0)


def rubric_items(clinicians: pd.DataFrame, jury: pd.Series | None) -> RubricItems:
    """Items are the conversations at least one clinician rated, in sorted order; jury means
    of other conversations are only counted (n_jury_items_unrated)."""
    check_ratings(clinicians, who="clinician", key=RATER)
    items, raters, scores = _wide(clinicians)
    if jury is None:
        jury_values, unrated = np.full(len(items), np.nan), 0
    else:
        check_jury(jury)
        jury = pd.to_numeric(jury, errors="coerce")
        jury_values = jury.reindex(items).to_numpy(dtype=float)
        unrated = int((~jury.index.isin(items)).sum())
    return RubricItems(items, raters, scores, jury_values, unrated, jury is not None)


def _wide(clinicians: pd.DataFrame) -> tuple[np.ndarray, list, np.ndarray]:
    """(items sorted, raters sorted, items x raters scores with NaN where none): what
    `pivot(index=item, columns=rater)` gives, placed by codes without building its index (a
    checked table has one score per item and rater)."""
    item_codes, items = pd.factorize(clinicians[ITEM], sort=True)
    rater_codes, raters = pd.factorize(clinicians[RATER], sort=True)
    scores = np.full((len(items), len(raters)), np.nan)
    scores[item_codes, rater_codes] = clinicians[SCORE].to_numpy(dtype=float)
    return np.asarray(items), list(raters), scores


class ItemColumns:
    """Named blocks of per-item columns; `sums` multiplies them all by the weights at once."""

    def __init__(self, n_items: int) -> None:
        self._n = n_items
        self._blocks: list[np.ndarray] = []
        self._slices: dict[str, slice] = {}

    def add(self, name: str, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=float)
        block = block[:, None] if block.ndim == 1 else block
        start = sum(existing.shape[1] for existing in self._blocks)
        self._slices[name] = slice(start, start + block.shape[1])
        self._blocks.append(block)

    def sums(self, weights: np.ndarray, *, whole: WholeRows | None = None) -> dict[str, np.ndarray]:
        """Every column summed under every row of `weights`; `whole`: the same rows in single
        precision when they are whole numbers (whole_rows), for the exact single-precision
        product of the columns that allow it."""
        matrix = np.hstack(self._blocks) if self._blocks else np.zeros((self._n, 0))
        totals = weights @ matrix if whole is None else _whole_product(weights, whole, matrix)
        return {name: totals[:, where] for name, where in self._slices.items()}


# Every whole number up to 2**24 is a single-precision float, and so is every sum of such
# products that stays under it: for those columns the single-precision product is exact, equal
# to the double-precision one to the last bit, and takes half the time (half the bytes through
# the processor). Most columns are counts, indicators and products of integer scores.
SINGLE_EXACT = 2**24


@dataclass(frozen=True)
class WholeRows:
    """Weight rows of whole numbers, in single precision, and their largest."""

    single: np.ndarray
    largest: float


def whole_rows(weights: np.ndarray) -> WholeRows | None:
    """The single-precision copy of `weights` when every weight is a whole number that
    single precision holds exactly (None otherwise)."""
    weights = np.asarray(weights, dtype=float)
    largest = float(np.abs(weights).max()) if weights.size else 0.0
    if largest >= SINGLE_EXACT or not np.array_equal(weights, np.rint(weights)):
        return None
    single = weights.astype(np.float32)
    single.flags.writeable = False
    return WholeRows(single, largest)


def _whole_product(weights: np.ndarray, whole: WholeRows, matrix: np.ndarray) -> np.ndarray:
    """weights @ matrix, the exact columns (whole numbers whose weighted sums stay under
    SINGLE_EXACT in every row) in single precision, the rest in double. Those go through a
    product of their own: the same precision, its additions perhaps in another order than in
    a product of every column at once (the BLAS picks its kernel by shape), so a sum can differ
    from that one in its last digit (1e-16 relative), never more."""
    exact = np.all(matrix == np.rint(matrix), axis=0)
    exact &= np.abs(matrix).sum(axis=0) * whole.largest < SINGLE_EXACT
    if exact.all():
        return (whole.single @ matrix.astype(np.float32)).astype(float)
    totals = np.empty((weights.shape[0], matrix.shape[1]))
    totals[:, exact] = whole.single @ matrix[:, exact].astype(np.float32)
    totals[:, ~exact] = weights @ matrix[:, ~exact]
    return totals


def one_hot(codes: np.ndarray, width: int, mask: np.ndarray) -> np.ndarray:
    """(items, width) indicator of each item's code; rows outside `mask` stay zero."""
    out = np.zeros((len(codes), width))
    out[np.flatnonzero(mask), codes[mask]] = 1.0
    return out


def score_levels(values: np.ndarray) -> np.ndarray:
    """Rounded score as a 0-4 column index (only meaningful where values are finite)."""
    return np.nan_to_num(round_half_up(values) - LEVELS[0]).astype(int)
