"""Realism of profiles and conversations as clinicians judged it (1-5 scores)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from alignment.engine.frames import HIGHEST, LEVELS


def realism_summary(scores: Sequence[int]) -> dict:
    """mean, sd (sample, n - 1), top_share (share of scores at 5) and n.

    Figures that need more data than there is are None (mean and top_share with no score,
    sd with fewer than two). A score outside 1-5 is a wrong input and raises ValueError."""
    values = np.asarray(list(scores), dtype=float)
    outside = ~np.isin(values, LEVELS)
    if outside.any():
        raise ValueError(f"realism scores must be integers 1-5; got {values[outside][:3].tolist()}")
    n = len(values)
    return {
        "mean": float(values.mean()) if n else None,
        "sd": float(values.std(ddof=1)) if n >= 2 else None,
        "top_share": float((values == HIGHEST).mean()) if n else None,
        "n": n,
    }
