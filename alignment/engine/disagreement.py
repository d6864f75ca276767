"""Conversations ranked by how far the jury is from the clinicians, per rubric."""

from __future__ import annotations

import numpy as np
import pandas as pd

from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE, check_ratings
from jury.engine.score_gaps import is_major

COLUMNS = [ITEM, RUBRIC, JURY, "clinician_mean", "n_ratings", "diff", "abs_diff", "major"]


def rank_disagreements(clinicians_long: pd.DataFrame, jury_long: pd.DataFrame) -> pd.DataFrame:
    """One row per rated (item, rubric): jury mean, clinician mean, n_ratings, diff (jury -
    clinician), abs_diff and major (abs_diff >= 2), largest abs_diff first.

    A rated conversation without a jury mean stays in, with NaN diff, at the end - so the
    report can count it rather than lose it. Ties keep a fixed order (rubric, then item)."""
    check_ratings(clinicians_long, who="clinician", key=RATER, extra=(RUBRIC,))
    means = (
        clinicians_long.groupby([ITEM, RUBRIC], sort=False)[SCORE]
        .agg(clinician_mean="mean", n_ratings="size")
        .reset_index()
    )
    jury = jury_long[[ITEM, RUBRIC, JURY]] if len(jury_long) else _empty_jury()
    table = means.merge(jury, on=[ITEM, RUBRIC], how="left", validate="one_to_one")
    table[JURY] = table[JURY].astype(float)
    table["diff"] = table[JURY] - table["clinician_mean"]
    table["abs_diff"] = table["diff"].abs()
    table["major"] = is_major(table["abs_diff"]).astype(bool)  # NaN (no jury): not major
    order = np.lexsort((table[ITEM].astype(str), table[RUBRIC].astype(str), -table["abs_diff"]))
    return table.iloc[order][COLUMNS].reset_index(drop=True)


def _empty_jury() -> pd.DataFrame:
    return pd.DataFrame(
        {
            ITEM: pd.Series(dtype=object),
            RUBRIC: pd.Series(dtype=object),
            JURY: pd.Series(dtype=float),
        }
    )
