"""Paired comparisons of agents that met the same cases.

Every agent in a run plays each case in the same sandbox against the same simulated patient,
so two agents are compared case by case, on score differences, never as two independent
samples. Input is `case_scores`: one row per (model, case), indexed by those two, with one
column per measure (the aggregate and each rubric), each model's complete repetitions of the
case already averaged (`case_means`). A case enters a pair's comparison only when both models
have a score for it; n is the number of such cases.

For every pair (first model minus second, in the order given: best aggregate first) and measure:
- the mean difference with a percentile bootstrap interval: cases are drawn with replacement
  from all cases, the same draws for every comparison, and a pair's resampled mean is taken
  over the drawn cases it shares; with a fixed seed, so a report never changes between loads;
- the two-sided Wilcoxon signed-rank p (scipy) with Pratt's treatment of zero differences:
  tied cases are ranked with the others and only then left out of the statistic, rather than
  discarded first (common here: rubric scores are means of a few integer judge scores); then
  Holm's adjustment over all pairs of that measure;
- wins, ties and losses of the first model, case by case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

CONFIDENCE = 0.95
ALPHA = 0.05
RESAMPLES = 2000
SEED = 0
# Scores are float means of judge scores: a difference this small is rounding, i.e. a tie.
TIE_TOLERANCE = 1e-9
# With n <= 5 pairs the exact two-sided signed-rank test cannot go below 2 / 2**5 = 0.0625.
MIN_CASES_TO_DETECT = 6
# Bootstrap resamples are drawn in batches of at most this many cells to bound memory.
BATCH_CELLS = 1 << 22

COLUMNS = [
    "measure",
    "model_a",
    "model_b",
    "n",
    "mean_difference",
    "ci_low",
    "ci_high",
    "p",
    "p_holm",
    "wins",
    "ties",
    "losses",
    "note",
]


def case_means(
    conversations: pd.DataFrame, measures: Sequence[str], *, case: str = "case"
) -> pd.DataFrame:
    """One row per (model, case): each measure averaged over the model's repetitions."""
    return conversations.groupby(["model", case], sort=True)[list(measures)].mean()


def paired_comparisons(
    case_scores: pd.DataFrame,
    *,
    models: Sequence[str],
    measures: Sequence[str],
    intervals: bool = True,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """One row per (measure, pair of models), measures in the order given, pairs in model order.

    Without `intervals` the bootstrap is skipped (ci_low and ci_high are NaN): the tests alone
    are cheap enough for pages that only need p-values."""
    if len(set(models)) != len(models):
        raise ValueError("models must be distinct")
    differences, labels = _differences(case_scores, models, measures)
    differences[np.abs(differences) < TIE_TOLERANCE] = 0.0
    n = (~np.isnan(differences)).sum(axis=0)
    result = labels.assign(
        n=n,
        mean_difference=_column_means(differences, n),
        ci_low=np.nan,
        ci_high=np.nan,
        p=signed_rank_pvalues(differences),
        wins=(differences > 0).sum(axis=0),
        ties=(differences == 0).sum(axis=0),
        losses=(differences < 0).sum(axis=0),
    )
    result["p_holm"] = result.groupby("measure", sort=False)["p"].transform(holm_adjust)
    if intervals:
        low, high = bootstrap_intervals(
            differences, resamples=resamples, seed=seed, confidence=confidence
        )
        result = result.assign(ci_low=low, ci_high=high)
    constant = _constant_columns(differences)
    result["note"] = [
        _note(n, ties, same)
        for n, ties, same in zip(result["n"], result["ties"], constant, strict=True)
    ]
    return result[COLUMNS]


def bootstrap_intervals(
    differences: np.ndarray,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean of each column of `differences` (cases x
    comparisons, NaN where a case is not paired). NaN for columns with fewer than two cases.

    The draws are `Generator.integers(0, n, (resamples, n))`, as in scipy.stats.bootstrap, so
    a column without gaps gets exactly scipy's percentile interval for the same seed."""
    differences = np.asarray(differences, dtype=float)
    paired = ~np.isnan(differences)
    filled = np.where(paired, differences, 0.0)
    # Comparisons of one pair share which cases are paired: count drawn cases once per pattern.
    patterns, pattern_of = np.unique(paired, axis=1, return_inverse=True)
    patterns = patterns.astype(float)
    means = np.concatenate(
        [
            _ratio(counts @ filled, (counts @ patterns)[:, pattern_of.ravel()])
            for counts in _resample_counts(len(differences), resamples, seed)
        ]
    )
    low = np.full(differences.shape[1], np.nan)
    high = low.copy()
    enough = paired.sum(axis=0) >= 2
    if enough.any():
        tail = (1 - confidence) / 2
        low[enough], high[enough] = np.nanquantile(means[:, enough], [tail, 1 - tail], axis=0)
    return low, high


def signed_rank_pvalues(differences: np.ndarray) -> np.ndarray:
    """Two-sided Wilcoxon signed-rank p of each column (NaN = unpaired case), zero_method
    "pratt". NaN below two paired cases; 1 when every difference is zero (no evidence of any
    difference, and scipy's statistic is undefined there)."""
    pvalues = np.full(differences.shape[1], np.nan)
    for column in range(differences.shape[1]):
        values = differences[:, column]
        values = values[~np.isnan(values)]
        if len(values) < 2:
            continue
        if not values.any():
            pvalues[column] = 1.0
            continue
        pvalues[column] = scipy_stats.wilcoxon(values, zero_method="pratt").pvalue
    return pvalues


def holm_adjust(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment. The i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) p_(j)); NaN p-values are not tested, so they are
    left out of the family (m) and stay NaN."""
    pvalues = np.asarray(pvalues, dtype=float)
    adjusted = np.full(pvalues.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(pvalues))
    order = tested[np.argsort(pvalues[tested], kind="stable")]
    steps = (len(order) - np.arange(len(order))) * pvalues[order]
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(steps))
    return adjusted


def versus_best(
    comparisons: pd.DataFrame,
    models: Sequence[str],
    alpha: float = ALPHA,
    *,
    shown: Mapping[str, str] | None = None,
) -> dict:
    """Each model's standing against models[0] (the highest aggregate) on the aggregate:
    "best" for models[0] and for every model whose aggregate as the table prints it
    (`shown`: model -> its printed figure) is the same: a reader who sees two identical
    figures must see the same standing. The others: "indistinguishable" when the
    Holm-adjusted p of their pair with models[0] is >= alpha, "different" when it is below,
    "untested" when the pair has no p (fewer than two shared cases)."""
    best = models[0]
    rows = comparisons[(comparisons["measure"] == "aggregate") & (comparisons["model_a"] == best)]
    adjusted = dict(zip(rows["model_b"], rows["p_holm"], strict=True))
    shown = shown or {}
    return {best: "best"} | {
        model: "best"
        if model in shown and shown[model] == shown.get(best)
        else _standing(adjusted.get(model, np.nan), alpha)
        for model in models[1:]
    }


def _standing(p_holm: float, alpha: float) -> str:
    if np.isnan(p_holm):
        return "untested"
    return "indistinguishable" if p_holm >= alpha else "different"


def _differences(case_scores: pd.DataFrame, models: Sequence[str], measures: Sequence[str]):
    """Cases x (measure, pair) matrix of first-minus-second differences, and its labels."""
    wide = case_scores[list(measures)].unstack("model")
    first, second = np.triu_indices(len(models), k=1)
    blocks = []
    for measure in measures:
        values = wide[measure].reindex(columns=list(models)).to_numpy(dtype=float)
        blocks.append(values[:, first] - values[:, second])
    labels = pd.DataFrame(
        {
            "measure": np.repeat(list(measures), len(first)),
            "model_a": np.tile(np.asarray(models, dtype=object)[first], len(measures)),
            "model_b": np.tile(np.asarray(models, dtype=object)[second], len(measures)),
        }
    )
    matrix = np.hstack(blocks) if blocks else np.empty((len(wide), 0))
    return matrix.reshape(len(wide), len(labels)), labels


def _column_means(differences: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _ratio(np.nansum(differences, axis=0), n)


def _ratio(numerator, denominator) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _resample_counts(n: int, resamples: int, seed: int):
    """How often each case is drawn in each resample, in batches of resamples x n."""
    rng = np.random.default_rng(seed)
    batch = max(1, BATCH_CELLS // max(n, 1))
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        draws = rng.integers(0, n, (size, n)) if n else np.empty((size, 0), dtype=int)
        draws += n * np.arange(size)[:, None]  # each resample counts into its own row
        yield np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(float)


def _constant_columns(differences: np.ndarray) -> np.ndarray:
    """Whether every paired case of a column has the same difference (its bootstrap interval
    then has zero width)."""
    paired = ~np.isnan(differences)
    high = np.where(paired, differences, -np.inf).max(axis=0, initial=-np.inf)
    low = np.where(paired, differences, np.inf).min(axis=0, initial=np.inf)
    return paired.any(axis=0) & (high - low <= TIE_TOLERANCE)


def _note(n: int, ties: int, same: bool) -> str:
    if n == 0:
        return "no case completed by both"
    if n == 1:
        return "one shared case: no interval or test"
    if ties == n:
        return "identical on every case"
    if same:
        return "the same difference on every case: an interval of zero width"
    if n < MIN_CASES_TO_DETECT:
        return f"fewer than {MIN_CASES_TO_DETECT} shared cases: the test cannot reach p < 0.05"
    return ""
