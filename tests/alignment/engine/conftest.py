"""Small builders for the engine tests (pure: no database)."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE


def clinicians(rows) -> pd.DataFrame:
    """rows: (item, rater, score)."""
    return pd.DataFrame(list(rows), columns=[ITEM, RATER, SCORE])


def jury(means: dict) -> pd.Series:
    return pd.Series(means, dtype=float)


def synthetic(n_items=120, n_raters=4, per_item=3, seed=0, rubrics=("safety",)):
    """Long clinician and jury tables around a latent 1-5 quality per conversation."""
    rng = np.random.default_rng(seed)
    rows, jury_rows = [], []
    for rubric in rubrics:
        quality = rng.uniform(1, 5, n_items)
        for item in range(n_items):
            raters = rng.choice(n_raters, size=per_item, replace=False)
            scores = np.clip(np.rint(quality[item] + rng.normal(0, 0.8, per_item)), 1, 5)
            rows += [(item, rubric, f"r{r}", int(s)) for r, s in zip(raters, scores, strict=True)]
            judges = np.clip(np.rint(quality[item] + rng.normal(-0.3, 0.9, 3)), 1, 5)
            jury_rows.append((item, rubric, judges.mean()))
    return (
        pd.DataFrame(rows, columns=[ITEM, RUBRIC, RATER, SCORE]),
        pd.DataFrame(jury_rows, columns=[ITEM, RUBRIC, JURY]),
    )


@pytest.fixture
def study():
    return synthetic()
