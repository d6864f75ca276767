"""Agreement coefficients computed from sums over items, so one formula serves both the point
estimate and every bootstrap resample (see bootstrap.py).

Each coefficient comes in two halves: `*_columns` turns per-item data into columns whose sums
over items are sufficient statistics, and `*_from_sums` turns summed columns (a leading batch
axis: row 0 the full sample, then one row per resample) into the coefficient.

- Krippendorff's alpha: coincidence matrices add up over units. The point estimate on the
  page comes from the `krippendorff` package (`library_alpha`); the tests check these sums give
  the package's value and the published ones.
- Gwet's AC1/AC2 and the ICC(A,1) are written here because the packages that hold them pin
  old scipy / pandas; both are tested against published examples.
- Quadratic-weighted Cohen's kappa equals 2 cov / (var_a + var_b + (mean_a - mean_b)^2) with
  population moments, so five moments per rater pair are enough; the point estimate on the page
  comes from scikit-learn and the tests check the two agree.
"""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
from scipy import sparse

from alignment.engine.bootstrap import ratio

LEVELS_OF_MEASUREMENT = ("nominal", "ordinal", "interval")


# --- Krippendorff's alpha ---------------------------------------------------------------


def coincidence_columns(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidences, flattened (units, q*q); counts[u, c] = ratings of level c in u.

    A unit with m >= 2 values contributes every ordered pair of its values weighted 1/(m - 1)
    (Krippendorff 2011, section C); units with fewer values are not pairable and add nothing."""
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    pairs -= counts[:, :, None] * np.eye(counts.shape[1])  # a value is not paired with itself
    weight = ratio(1.0, m - 1)
    weight[m < 2] = 0.0
    return (pairs * weight[:, None, None]).reshape(len(counts), counts.shape[1] ** 2)


def _squared_distances(marginals: np.ndarray, level: str, values: np.ndarray) -> np.ndarray:
    """delta^2 between levels, (batch, q, q); ordinal depends on the observed marginals."""
    q = len(values)
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(q), (len(marginals), q, q))
    if level == "interval":
        gaps = (values[:, None] - values[None, :]) ** 2
        return np.broadcast_to(gaps, (len(marginals), q, q))
    if level == "ordinal":
        # delta(c, k) = sum of n_g for g from c to k, minus (n_c + n_k) / 2: a difference of
        # "mid-cumulative" counts, so (mid_k - mid_c)^2.
        mid = np.cumsum(marginals, axis=1) - marginals / 2
        return (mid[:, None, :] - mid[:, :, None]) ** 2
    raise ValueError(f"level of measurement must be one of {LEVELS_OF_MEASUREMENT}")


def alpha_from_sums(coincidences: np.ndarray, *, level: str, values: np.ndarray) -> np.ndarray:
    """alpha = 1 - D_observed / D_expected per batch row; NaN when undefined (no pairable
    values, or a single value so nothing is expected to disagree)."""
    q = len(values)
    o = np.asarray(coincidences, dtype=float).reshape(-1, q, q)
    marginals = o.sum(axis=2)
    n = marginals.sum(axis=1)
    delta = _squared_distances(marginals, level, np.asarray(values, dtype=float))
    observed = (o * delta).sum(axis=(1, 2))
    expected = (marginals[:, :, None] * marginals[:, None, :] * delta).sum(axis=(1, 2))
    expected = np.where(n > 1, expected / np.maximum(n - 1, 1), 0.0)
    return 1.0 - ratio(observed, expected)


def library_alpha(reliability: np.ndarray, *, level: str, values: np.ndarray) -> float:
    """The `krippendorff` package's alpha on a (raters, units) matrix with NaN for missing;
    NaN when it is undefined (the package divides 0 by 0 there)."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        value = krippendorff.alpha(
            reliability_data=reliability,
            level_of_measurement=level,
            value_domain=list(values),
        )
    return float(value)


# --- Gwet's AC1 / AC2 -------------------------------------------------------------------


def quadratic_weights(q: int) -> np.ndarray:
    """Agreement weights 1 - (k - l)^2 / (q - 1)^2 (Gwet 2014, ch. 3); identity gives AC1."""
    levels = np.arange(q)
    return 1.0 - (levels[:, None] - levels[None, :]) ** 2 / (q - 1) ** 2


def gwet_columns(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-unit columns [agreement, has 2+ ratings, rated, shares of each level (q)].

    counts[i, k] = r_ik, raters who put unit i in category k; r_i = sum_k r_ik. Units with one
    rating (missing ratings) still inform the category shares pi_k but not the observed
    agreement - exactly as Gwet's estimator for incomplete designs (irrCAC's `gwet`)."""
    counts = np.asarray(counts, dtype=float)
    r = counts.sum(axis=1)
    weighted = counts @ weights.T  # r*_ik = sum_l w_kl r_il
    agreement = ratio((counts * (weighted - 1)).sum(axis=1), r * (r - 1))
    agreement[r < 2] = 0.0
    shares = ratio(counts, r[:, None])
    shares[r < 1] = 0.0
    return np.column_stack([agreement, r >= 2, r >= 1, shares])


def gwet_from_sums(sums: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """(pa, pe, coefficient) per batch row:
    pa = mean over units with 2+ ratings of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1));
    pi_k = mean over rated units of r_ik / r_i;
    pe = sum(w) / (q (q - 1)) * sum_k pi_k (1 - pi_k);  AC = (pa - pe) / (1 - pe)."""
    sums = np.atleast_2d(sums)
    q = weights.shape[0]
    pa = ratio(sums[:, 0], sums[:, 1])
    pi = ratio(sums[:, 3:], sums[:, 2:3])
    pe = weights.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum(axis=1)
    return pa, pe, ratio(pa - pe, 1 - pe)


# --- ICC(A,1) ---------------------------------------------------------------------------


def icc_columns(ratings: np.ndarray) -> np.ndarray:
    """Per-target columns [1, (row sum)^2, sum of squares, each rater's score (k)] for a
    complete (targets, raters) matrix."""
    ratings = np.asarray(ratings, dtype=float)
    return np.column_stack(
        [np.ones(len(ratings)), ratings.sum(axis=1) ** 2, (ratings**2).sum(axis=1), ratings]
    )


def icc_from_sums(sums: np.ndarray) -> np.ndarray:
    """Two-way random effects, absolute agreement, single rater: Shrout & Fleiss (1979)
    ICC(2,1) = McGraw & Wong (1996) ICC(A,1) =
        (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n)
    from the two-way ANOVA without replication (rows = targets, columns = raters)."""
    sums = np.atleast_2d(sums)
    n, row_squares, squares, column_sums = sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3:]
    k = column_sums.shape[1]
    grand = column_sums.sum(axis=1)
    correction = ratio(grand**2, n * k)
    ss_rows = row_squares / k - correction
    ss_columns = ratio((column_sums**2).sum(axis=1), n) - correction
    ss_error = squares - correction - ss_rows - ss_columns
    ms_rows = ratio(ss_rows, n - 1)
    ms_columns = ss_columns / (k - 1)
    ms_error = ratio(ss_error, (n - 1) * (k - 1))
    denominator = ms_rows + (k - 1) * ms_error + ratio(k * (ms_columns - ms_error), n)
    # Rounding can leave a zero-variance table at +-1e-16 rather than 0: treat as undefined.
    denominator = np.where(np.abs(denominator) < 1e-12, 0.0, denominator)
    return ratio(ms_rows - ms_error, denominator)


# --- quadratic-weighted Cohen's kappa ---------------------------------------------------


def kappa_columns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-item moments [shared, a, b, a^2, b^2, ab] for two raters, zero where either is NaN."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    shared = ~(np.isnan(a) | np.isnan(b))
    a0, b0 = np.where(shared, a, 0.0), np.where(shared, b, 0.0)
    return np.column_stack([shared, a0, b0, a0**2, b0**2, a0 * b0])


def kappa_from_sums(sums: np.ndarray) -> np.ndarray:
    """1 - sum(O (k-l)^2) / sum(E (k-l)^2) = 2 cov / (var_a + var_b + (mean_a - mean_b)^2)."""
    sums = np.atleast_2d(sums)
    n = sums[:, 0]
    mean_a, mean_b = ratio(sums[:, 1], n), ratio(sums[:, 2], n)
    var_a = ratio(sums[:, 3], n) - mean_a**2
    var_b = ratio(sums[:, 4], n) - mean_b**2
    cov = ratio(sums[:, 5], n) - mean_a * mean_b
    denominator = var_a + var_b + (mean_a - mean_b) ** 2
    denominator = np.where(np.abs(denominator) < 1e-12, 0.0, denominator)
    return ratio(2 * cov, denominator)


# --- Spearman on resamples --------------------------------------------------------------


def _midranks(counts: np.ndarray) -> np.ndarray:
    """Mid-rank of each distinct value (columns, ascending) given how often each occurs."""
    return np.cumsum(counts, axis=1) - counts + (counts + 1) / 2


def _column_sums_by_code(
    weights: np.ndarray, codes: np.ndarray, width: int, columns: np.ndarray
) -> np.ndarray:
    """weights[:, columns] @ one_hot(codes): the columns of each code added up, as a product
    with a sparse one-hot (one entry per item), so neither the dense one-hot (a thousand
    resamples times a thousand items times hundreds of cells) nor a copy of the selected
    weight columns is ever made."""
    weights = np.asarray(weights, dtype=float)
    if len(codes) == 0:
        return np.zeros((weights.shape[0], width))
    one_hot = sparse.csc_matrix(
        (np.ones(len(codes)), (columns, codes)), shape=(weights.shape[1], width)
    )
    return np.asarray(weights @ one_hot)


def spearman_from_weights(
    weights: np.ndarray, x: np.ndarray, y: np.ndarray, columns: np.ndarray | None = None
) -> np.ndarray:
    """Spearman's rho of (x, y) in each resample (rows of weights = draw counts per item):
    the Pearson correlation of mid-ranks, exactly what scipy gives the resample written out
    with its repeats. Worked on the table of distinct (x, y) pairs, not on items, since
    scores and means take few distinct values. columns: the weight column of each (x, y)
    pair (default: the pairs are the columns, in order)."""
    columns = np.arange(len(x)) if columns is None else np.asarray(columns)
    x_values, x_codes = np.unique(x, return_inverse=True)
    y_values, y_codes = np.unique(y, return_inverse=True)
    cells, cell_codes = np.unique(x_codes * len(y_values) + y_codes, return_inverse=True)
    joint = _column_sums_by_code(weights, cell_codes, len(cells), columns)  # (batch, cells)
    cell_x, cell_y = cells // len(y_values), cells % len(y_values)
    rank_x = _midranks(joint @ np.eye(len(x_values))[cell_x])[:, cell_x]
    rank_y = _midranks(joint @ np.eye(len(y_values))[cell_y])[:, cell_y]
    centre = (joint.sum(axis=1, keepdims=True) + 1) / 2  # mid-ranks 1..n average (n + 1) / 2
    cov = (joint * (rank_x - centre) * (rank_y - centre)).sum(axis=1)
    var_x = (joint * (rank_x - centre) ** 2).sum(axis=1)
    var_y = (joint * (rank_y - centre) ** 2).sum(axis=1)
    denominator = np.sqrt(var_x * var_y)
    denominator = np.where(denominator < 1e-12, 0.0, denominator)
    return ratio(cov, denominator)
