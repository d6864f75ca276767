"""Reliability over repeated encounters: pass^k and the expected worst of k.

A case met n times (the run's repetitions of one patient) passed c of them. pass^k asks how
likely it is that k encounters drawn from those n all pass; the unbiased estimate for the case
is C(c, k) / C(n, k), averaged over cases (the estimator of tau2-bench's pass^k). The expected
worst score over k encounters is, for a case with scores s(1) <= ... <= s(n), the sum over j of
s(j) times the chance that s(j) is the smallest of k drawn without replacement,
C(n - j, k - 1) / C(n, k). Intervals come from a bootstrap over cases: repetitions of one case
are not independent, so cases are what is resampled. A case with fewer than k scored
encounters does not count for that k. Pure: pandas and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 20261202
COLUMNS = ["model", "measure", "stratum", "k", "pass_hat_k", "low", "high", "worst_of_k", "n_cases"]
# Fewer repetitions than this make pass^k a short curve (tau2-bench asks for at least 4).
RECOMMENDED_REPETITIONS = 4


@dataclass(frozen=True)
class CaseOutcomes:
    """One case's scored encounters: their scores and whether each passed."""

    scores: tuple[float, ...]
    passed: tuple[bool, ...]


def curve(
    cases: list[CaseOutcomes],
    k_max: int,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> pd.DataFrame:
    """pass^k (with its bootstrap interval over cases), the expected worst of k and the number
    of cases counted, for k = 1..k_max."""
    frame = pd.DataFrame(
        {
            "case": np.repeat(np.arange(len(cases)), [len(case.scores) for case in cases]),
            "score": [score for case in cases for score in case.scores],
            "passed": [passed for case in cases for passed in case.passed],
        }
    )
    per_case = case_frame(frame, [], k_max)
    return _curve(per_case, k_max, resamples, confidence, seed)


def case_frame(encounters: pd.DataFrame, strata: list[str], k_max: int) -> pd.DataFrame:
    """One row per case: its encounters n, passes c, its attributes, and worst_1..worst_k_max
    (NaN where n < k). Cases met equally often are computed together, as one matrix."""
    ordered = encounters.sort_values(["case", "score"], kind="stable")
    columns = {"n": ("score", "size"), "c": ("passed", "sum")}
    columns |= {attribute: (attribute, "first") for attribute in strata}
    cases = ordered.groupby("case", sort=True).agg(**columns)
    for k in range(1, k_max + 1):
        cases[f"worst_{k}"] = np.nan
    scores = ordered["score"].to_numpy(dtype=float)
    starts = np.concatenate([[0], np.cumsum(cases["n"].to_numpy())[:-1]])
    for n in np.unique(cases["n"]):
        rows = np.flatnonzero(cases["n"].to_numpy() == n)
        matrix = scores[starts[rows][:, None] + np.arange(n)]  # each row sorted ascending
        for k in range(1, min(n, k_max) + 1):
            # The j-th lowest of n is the lowest of k drawn with chance C(n - j, k - 1) / C(n, k).
            chance = np.array([comb(n - j, k - 1) for j in range(1, n + 1)]) / comb(n, k)
            cases.iloc[rows, cases.columns.get_loc(f"worst_{k}")] = matrix @ chance
    return cases


def _curve(
    cases: pd.DataFrame, k_max: int, resamples: int, confidence: float, seed: int
) -> pd.DataFrame:
    """The curve of a set of cases (rows of case_frame). A case's pass-hat depends only on its
    (n, c), so resampling cases is a multinomial draw over those few kinds: the bootstrap costs
    nothing like resampling every case."""
    kinds = cases.groupby(["n", "c"]).size()
    n = kinds.index.get_level_values("n").to_numpy()
    c = kinds.index.get_level_values("c").to_numpy()
    counts = kinds.to_numpy()
    draws = (
        np.random.default_rng(seed).multinomial(counts.sum(), counts / counts.sum(), resamples)
        if counts.sum()
        else np.zeros((resamples, 0))
    )
    tail = (1 - confidence) / 2
    rows = []
    for k in range(1, k_max + 1):
        valid = n >= k
        values = np.array(
            [comb(int(ci), k) / comb(int(ni), k) for ni, ci in zip(n[valid], c[valid], strict=True)]
        )
        counted = int(counts[valid].sum())
        estimate = low = high = np.nan
        if counted:
            estimate = float(counts[valid] @ values / counted)
            with np.errstate(invalid="ignore"):  # a resample may hold no case met k times
                means = draws[:, valid] @ values / draws[:, valid].sum(axis=1)
            low, high = np.nanquantile(means, [tail, 1 - tail])
        worst = cases[f"worst_{k}"].mean() if len(cases) else np.nan
        rows.append((k, estimate, low, high, worst, counted))
    return pd.DataFrame(rows, columns=["k", "pass_hat_k", "low", "high", "worst_of_k", "n_cases"])


def reliability_table(
    encounters: pd.DataFrame,
    *,
    strata: list[str],
    k_max: int,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> pd.DataFrame:
    """The pass^k rows (COLUMNS) of every model, measure and stratum.

    `encounters`: one row per scored encounter with columns model, measure, case, score,
    passed, and one column per stratum attribute (a case's attribute is the same on every
    repetition). Stratum "all" is every case; then "attribute=value" for each value."""
    rows = []
    for (model, measure), group in encounters.groupby(["model", "measure"], sort=False):
        cases = case_frame(group, strata, k_max)
        for stratum, part in _strata(cases, strata):
            table = _curve(part, k_max, resamples, CONFIDENCE, seed)
            rows.append(table.assign(model=model, measure=measure, stratum=stratum))
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(rows, ignore_index=True)[COLUMNS]


def _strata(cases: pd.DataFrame, strata: list[str]):
    yield "all", cases
    for attribute in strata:
        for value, part in cases.groupby(attribute, sort=True, dropna=True):
            if value == "":
                continue
            yield f"{attribute}={value}", part
