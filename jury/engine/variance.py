"""Where a score's spread comes from: variance components of one model's scores, and the
decision study built on them.

A model meets each case (a patient) n_i times (repetitions: the agent and the simulated patient
sample anew) and every conversation is scored by the same J judges. One score is

    x = mu + case + repetition(case) + judge + case:judge + residual

with every term but mu random and independent. The five variances are estimated by REML; on a
balanced design (every case met equally often) with no estimate at zero that is the classical
ANOVA estimate, which is where the search starts.

Why this is fast and exact: with every judge scoring every conversation, an orthonormal change
of basis over the judges splits each conversation's J scores into their mean and J - 1
contrasts, and the two parts are independent. The means follow a one-way nested model (case,
then repetition), the contrasts a nested model under one shared judge draw per contrast; both
have closed-form inverses and determinants per case, so the likelihood is a sum over cases of
a few sufficient statistics, however many conversations there are.

Intervals: the inverse of the observed information (a numerical Hessian of the REML
log-likelihood) gives each estimate's variance v; a component above zero gets the Satterthwaite
interval (df = 2 est^2 / v, scaled chi-square quantiles), one at zero gets [0, z * sqrt(v)], and
a share of the total variance gets a delta-method interval clipped to [0, 1].

What cannot be told apart is said, not guessed: with one judge there is no judge, case x judge
or residual component (the case and repetition ones carry them); with one repetition per case
the repetition component folds into the case one and case x judge into the residual.

Pure: numpy, pandas and scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.stats import chi2, norm

COMPONENTS = ("case", "repetition", "judge", "case_judge", "residual")
COMPONENT_NAMES = {
    "case": "Case",
    "repetition": "Repetition within a case",
    "judge": "Judge",
    "case_judge": "Case x judge",
    "residual": "Residual",
}
CONFIDENCE = 0.95
COLUMNS = [
    "model",
    "measure",
    "component",
    "variance",
    "low",
    "high",
    "share",
    "share_low",
    "share_high",
    "n_cases",
    "n_conversations",
    "n_judges",
    "method",
]
_FLOOR = 1e-10  # the residual variance is kept above zero: the likelihood needs it


@dataclass(frozen=True)
class Design:
    """Sufficient statistics of one model's scores on one measure, pooled over the cases met
    equally often (the likelihood treats such cases alike, so it costs the same for 100 cases
    or 100,000).

    Per group g of cases met sizes[g] times: counts (cases), totals (the sum over its cases of
    T = the sum of a case's conversation judge means), case_squares (the sum of T^2 / n),
    contrast_totals (per judge contrast, the sum of the contrast over its conversations) and
    contrast_case_squares (the sum over cases and contrasts of that sum squared / n); and the
    sums of squares within cases of the judge means and of the contrasts."""

    sizes: np.ndarray
    counts: np.ndarray
    totals: np.ndarray
    case_squares: np.ndarray
    contrast_totals: np.ndarray  # groups x (J - 1)
    contrast_case_squares: np.ndarray
    within_ss: float
    contrast_within_ss: float
    judges: int

    @property
    def cases(self) -> int:
        return int(self.counts.sum())

    @property
    def conversations(self) -> int:
        return int(np.sum(self.counts * self.sizes))

    @property
    def within_df(self) -> float:
        """Degrees of freedom of the spread between a case's conversations."""
        return float(self.conversations - self.cases)

    @property
    def balanced(self) -> bool:
        return self.sizes.size == 1

    @property
    def identified(self) -> dict[str, bool]:
        """Which components the design can tell apart."""
        repeated = bool(np.any(self.sizes >= 2))
        judged = self.judges >= 2
        return {
            "case": self.cases >= 2,
            "repetition": repeated,
            "judge": judged,
            "case_judge": judged and repeated,
            "residual": judged,
        }


@dataclass
class Components:
    """Estimated variances (COMPONENTS order) with their intervals; NaN where not identified."""

    variance: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    share: dict[str, float]
    share_low: dict[str, float]
    share_high: dict[str, float]
    design: Design
    method: str
    covariance: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))


def design_from_scores(scores: pd.DataFrame) -> Design:
    """Sufficient statistics from one row per judge score: columns case, conversation, judge,
    score. Conversations lacking a judge's score are dropped (every judge scores every
    conversation in a complete scoring job); two scores of one judge are averaged."""
    conversation, conversations = pd.factorize(scores["conversation"])
    judge, judges = pd.factorize(scores["judge"])
    shape = (conversations.size, judges.size)
    cell = conversation * judges.size + judge
    values = scores["score"].to_numpy(dtype=float)
    sums = np.bincount(cell, weights=values, minlength=shape[0] * shape[1]).reshape(shape)
    counts = np.bincount(cell, minlength=shape[0] * shape[1]).reshape(shape)
    complete = np.all(counts > 0, axis=1)
    if not complete.any():
        raise ValueError("no conversation has a score from every judge")
    matrix = sums[complete] / counts[complete]
    case_of = np.empty(conversations.size, dtype=object)
    case_of[conversation] = scores["case"].to_numpy()
    case, _ = pd.factorize(case_of[complete])
    return _pooled(case, matrix)


def _pooled(case: np.ndarray, matrix: np.ndarray) -> Design:
    """Design from each conversation's case code and its row of judge scores."""
    cases, judges = case.max() + 1, matrix.shape[1]
    contrasts = matrix @ helmert(judges).T  # conversations x (J - 1)
    means = matrix.mean(axis=1)
    reps = np.bincount(case, minlength=cases).astype(float)
    totals = np.bincount(case, weights=means, minlength=cases)
    contrast_totals = _sum_by(case, contrasts, cases)
    sizes, group = np.unique(reps, return_inverse=True)
    case_squares = totals**2 / reps
    contrast_case_squares = (contrast_totals**2).sum(axis=1) / reps
    return Design(
        sizes=sizes,
        counts=np.bincount(group).astype(float),
        totals=np.bincount(group, weights=totals),
        case_squares=np.bincount(group, weights=case_squares),
        contrast_totals=_sum_by(group, contrast_totals, sizes.size),
        contrast_case_squares=np.bincount(group, weights=contrast_case_squares),
        within_ss=float(np.sum(means**2) - case_squares.sum()),
        contrast_within_ss=float(np.sum(contrasts**2) - contrast_case_squares.sum()),
        judges=judges,
    )


def helmert(size: int) -> np.ndarray:
    """(size - 1) x size orthonormal contrasts, each orthogonal to the all-ones vector."""
    rows = []
    for index in range(1, size):
        row = np.zeros(size)
        row[:index] = 1.0
        row[index] = -index
        rows.append(row / math.sqrt(index * (index + 1)))
    return np.array(rows).reshape(size - 1, size)


def _sum_by(codes: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    columns = [
        np.bincount(codes, weights=values[:, m], minlength=groups) for m in range(values.shape[1])
    ]
    return np.column_stack(columns) if columns else np.zeros((groups, 0))


# --- the likelihood --------------------------------------------------------------------------


def log_likelihood(theta: np.ndarray, design: Design) -> float:
    """REML log-likelihood (up to a constant) at theta = the five variances in COMPONENTS order."""
    case, repetition, judge, case_judge, residual = theta
    judges = design.judges
    between = case + case_judge / judges  # variance of a case's judge mean
    within = repetition + residual / judges  # of a conversation's judge mean about its case's
    if between < 0 or within < 0:
        return -np.inf
    return _mean_part(between, within, design) + _contrast_part(judge, case_judge, residual, design)


def _mean_part(between: float, within: float, design: Design) -> float:
    """REML of the judge means: a one-way nested model with an unknown overall mean."""
    spread = within + design.sizes * between
    if np.any(spread <= 0):
        return -np.inf
    log_det = design.counts @ np.log(spread)
    log_det += _within_term(design.within_df, design.within_ss, within)
    weight = design.counts @ (design.sizes / spread)
    weighted_total = np.sum(design.totals / spread)
    quadratic = np.sum(design.case_squares / spread) - weighted_total**2 / weight
    return -0.5 * (log_det + math.log(weight) + quadratic)


def _within_term(df: float, sum_of_squares: float, variance: float) -> float:
    """df * log(variance) + sum_of_squares / variance: the part of a nested model's likelihood
    from the spread within cases; nothing when no case was met twice."""
    if df == 0:
        return 0.0
    if variance <= 0:
        return np.inf
    return df * math.log(variance) + sum_of_squares / variance


def _contrast_part(judge: float, case_judge: float, residual: float, design: Design) -> float:
    """Likelihood of the judge contrasts: mean zero, one shared judge draw per contrast."""
    if design.judges < 2:
        return 0.0
    if residual <= 0 or judge < 0 or case_judge < 0:
        return -np.inf
    contrasts = design.judges - 1
    spread = residual + design.sizes * case_judge
    weight = design.counts @ (design.sizes / spread)
    shared = 1 + judge * weight  # the one judge draw every conversation of a contrast shares
    weighted = (1 / spread) @ design.contrast_totals  # per contrast
    log_det = contrasts * (design.counts @ np.log(spread) + math.log(shared))
    log_det += _within_term(design.within_df * contrasts, design.contrast_within_ss, residual)
    quadratic = np.sum(design.contrast_case_squares / spread)
    quadratic -= judge * np.sum(weighted**2) / shared
    return -0.5 * (log_det + quadratic)


# --- estimation ------------------------------------------------------------------------------


def anova_start(design: Design) -> np.ndarray:
    """Moment estimates (exact ANOVA on a balanced design), clipped at zero: where REML starts."""
    judges, cases = design.judges, design.cases
    conversations = design.conversations
    spread_of_sizes = design.counts @ design.sizes**2
    # The average case size adjusted for imbalance (1 with a single case, where it is unused).
    n0 = (conversations - spread_of_sizes / conversations) / max(cases - 1, 1) or 1.0
    within_df = design.within_df
    # The judge means: E[within MS] = repetition + residual / J, E[between MS] = that + n0 * (case
    # + case_judge / J).
    within_ms = design.within_ss / within_df if within_df else 0.0
    grand = design.totals.sum() / conversations
    between_ms = (design.case_squares.sum() - conversations * grand**2) / max(cases - 1, 1)
    start = np.zeros(5)
    start[0] = max((between_ms - within_ms) / n0, 0.0)
    start[1] = within_ms
    if judges < 2:
        return start
    # The contrasts: E[within MS] = residual, E[between-case MS] = residual + n0 * case_judge,
    # E[mean contrast^2] = judge + case_judge * sum(n^2) / N^2 + residual / N.
    contrasts = judges - 1
    overall = design.contrast_totals.sum(axis=0) / conversations
    between_contrast = design.contrast_case_squares.sum() - conversations * np.sum(overall**2)
    between_contrast /= max(cases - 1, 1) * contrasts
    if within_df:
        residual = design.contrast_within_ss / (within_df * contrasts)
        case_judge = max((between_contrast - residual) / n0, 0.0)
    else:  # one conversation per case: case x judge folds into the residual
        residual, case_judge = between_contrast, 0.0
    concentration = spread_of_sizes / conversations**2
    judge = np.mean(overall**2) - case_judge * concentration - residual / conversations
    start[2:] = max(judge, 0.0), case_judge, max(residual, _FLOOR)
    start[0] = max(start[0] - case_judge / judges, 0.0)
    start[1] = max(within_ms - residual / judges, 0.0) if within_df else 0.0
    return start


def estimate(design: Design, confidence: float = CONFIDENCE) -> Components:
    """REML variance components with their intervals and shares."""
    free = np.array([design.identified[name] for name in COMPONENTS])
    start = anova_start(design)
    start[~free] = 0.0
    if design.balanced and np.all(start[free] > _FLOOR):
        theta = start  # the REML maximum: on a balanced design ANOVA is REML inside the bounds
        method = "REML (= ANOVA, balanced)"
    else:
        theta = maximise(design, start, free)
        method = "REML (unbalanced)" if not design.balanced else "REML (a part at zero)"
    covariance = _covariance(design, theta, free)
    return _components(design, theta, free, covariance, confidence, method)


def maximise(design: Design, start: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The REML estimate of the free components, searched from `start` within the bounds."""
    scale = max(float(np.sum(start[free])), 1e-6)

    def objective(values: np.ndarray) -> float:
        theta = np.zeros(5)
        theta[free] = values * scale
        value = log_likelihood(theta, design)
        return -value if np.isfinite(value) else 1e300

    names = np.array(COMPONENTS)[free]
    bounds = [(_FLOOR / scale if name == "residual" else 0.0, None) for name in names]
    initial = np.clip(start[free] / scale, [low for low, _ in bounds], None)
    options = {"ftol": 1e-12, "gtol": 1e-9, "maxiter": 500}
    result = optimize.minimize(
        objective, initial, method="L-BFGS-B", bounds=bounds, options=options
    )
    theta = np.zeros(5)
    theta[free] = result.x * scale
    return theta


def _covariance(design: Design, theta: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Inverse observed information over the free components (numerical Hessian)."""
    index = np.flatnonzero(free)
    steps = np.maximum(np.abs(theta[index]) * 1e-3, 1e-6)
    # A component at zero is differentiated a little inside the boundary.
    theta = theta.copy()
    theta[index] = np.maximum(theta[index], 2 * steps)
    size = index.size
    hessian = np.zeros((size, size))

    def at(offsets: dict[int, float]) -> float:
        shifted = theta.copy()
        for position, offset in offsets.items():
            shifted[index[position]] += offset
        return log_likelihood(shifted, design)

    centre = at({})
    for a in range(size):
        for b in range(a, size):
            if a == b:
                value = (at({a: steps[a]}) - 2 * centre + at({a: -steps[a]})) / steps[a] ** 2
            else:
                value = (
                    at({a: steps[a], b: steps[b]})
                    - at({a: steps[a], b: -steps[b]})
                    - at({a: -steps[a], b: steps[b]})
                    + at({a: -steps[a], b: -steps[b]})
                ) / (4 * steps[a] * steps[b])
            hessian[a, b] = hessian[b, a] = value
    try:
        covariance = np.linalg.pinv(-hessian)
    except np.linalg.LinAlgError:
        covariance = np.full((size, size), np.nan)
    full = np.full((5, 5), np.nan)
    full[np.ix_(index, index)] = covariance
    return full


def _components(design: Design, theta, free, covariance, confidence, method) -> Components:
    identified = design.identified
    total = float(np.sum(theta))
    if total <= 1e-8:  # every score alike: no spread to share out
        total = math.nan
    z = norm.ppf(0.5 + confidence / 2)
    values, lows, highs, shares, share_lows, share_highs = ({} for _ in range(6))
    gradient_base = -theta / total**2
    for position, name in enumerate(COMPONENTS):
        if not identified[name] and theta[position] == 0:
            values[name] = lows[name] = highs[name] = math.nan
            shares[name] = share_lows[name] = share_highs[name] = math.nan
            continue
        variance = float(theta[position]) if theta[position] > 2 * _FLOOR else 0.0  # not the floor
        spread = float(covariance[position, position]) if free[position] else math.nan
        values[name] = variance
        lows[name], highs[name] = satterthwaite(variance, spread, confidence)
        share = variance / total
        gradient = gradient_base.copy()
        gradient[position] += 1 / total
        kept = free & np.isfinite(np.diag(covariance))
        share_spread = float(gradient[kept] @ covariance[np.ix_(kept, kept)] @ gradient[kept])
        half = z * math.sqrt(max(share_spread, 0.0))
        shares[name] = share
        share_lows[name] = max(share - half, 0.0)
        share_highs[name] = min(share + half, 1.0)
    return Components(
        values, lows, highs, shares, share_lows, share_highs, design, method, covariance
    )


def satterthwaite(estimate: float, spread: float, confidence: float = CONFIDENCE):
    """Interval of a variance component from its estimate and the estimate's variance."""
    if not math.isfinite(spread) or spread <= 0:
        return (math.nan, math.nan)
    if estimate <= 1e-8:
        return (0.0, norm.ppf(0.5 + confidence / 2) * math.sqrt(spread))
    df = 2 * estimate**2 / spread
    tail = (1 - confidence) / 2
    lower_quantile = chi2.ppf(tail, df)
    # With almost no degrees of freedom the lower quantile underflows to 0: no upper bound.
    high = df * estimate / lower_quantile if lower_quantile > 0 else math.inf
    return (df * estimate / chi2.ppf(1 - tail, df), high)


def components_table(scores: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """COLUMNS for every model and measure of `scores` (model, measure, case, conversation,
    judge, score): one row per component."""
    rows = []
    for (model, measure), group in scores.groupby(["model", "measure"], sort=False):
        design = design_from_scores(group)
        result = estimate(design, confidence)
        for name in COMPONENTS:
            rows.append(
                {
                    "model": model,
                    "measure": measure,
                    "component": name,
                    "variance": result.variance[name],
                    "low": result.low[name],
                    "high": result.high[name],
                    "share": result.share[name],
                    "share_low": result.share_low[name],
                    "share_high": result.share_high[name],
                    "n_cases": design.cases,
                    "n_conversations": design.conversations,
                    "n_judges": design.judges,
                    "method": result.method,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
