"""The Wilson score interval of a proportion, shared by the jury's and the fidelity review's
statistics. Pure: numpy and scipy."""

from __future__ import annotations

import numpy as np
from scipy import stats as scipy_stats

CONFIDENCE = 0.95


def wilson_interval(successes, n, confidence: float = CONFIDENCE):
    """Wilson score interval for a proportion; works on scalars or arrays (NaN where n = 0)."""
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    z = scipy_stats.norm.ppf(1 - (1 - confidence) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = successes / n
        denominator = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denominator
        half = z / denominator * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    # Exact arithmetic keeps it in [0, 1] and around p; floats put 0 of 7 a hair above 0 and
    # 10 of 10 a hair below 1, and a figure's error bar (p - low) then comes out negative.
    low = np.minimum(np.clip(centre - half, 0.0, 1.0), p)
    high = np.maximum(np.clip(centre + half, 0.0, 1.0), p)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high
