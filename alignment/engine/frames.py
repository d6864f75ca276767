"""Column names and checks for the long tables the alignment engine reads.

Every statistic takes plain pandas tables in long form, one row per rating:
- clinicians: ITEM (conversation id), RATER (annotator id), SCORE (int 1-5), and RUBRIC when
  several rubrics travel together;
- jury: ITEM (and RUBRIC) with JURY, the jury mean (float; NaN when the jury is incomplete);
- judges: ITEM, JUDGE, SCORE - one judge's integer score;
- design: ITEM (and RUBRIC) with WEIGHT (1 / inclusion probability) and STRATUM (the item's
  sampling cell for that rubric), for the population-weighted figures (design.py).

The Django side (alignment/services/frames.py) builds these; the engine never imports Django.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from jury.engine.score_gaps import TOLERANCE

ITEM = "item"
RUBRIC = "rubric"
RATER = "rater"
SCORE = "score"
JURY = "jury"
JUDGE = "judge"
WEIGHT = "weight"
STRATUM = "stratum"

LEVELS = (1, 2, 3, 4, 5)
LOWEST, HIGHEST = LEVELS[0], LEVELS[-1]


def round_half_up(values: np.ndarray | pd.Series | float) -> np.ndarray:
    """Round to the nearest score level, halves upwards (2.5 -> 3, 3.5 -> 4), clipped to 1-5.

    numpy's own rounding sends halves to the even neighbour (2.5 -> 2), which would make
    exact agreement depend on parity; NaN stays NaN. A float mean such as 3.4999999999 (sum of
    judge scores / K) rounds like 3.5: the tolerance of every score comparison."""
    rounded = np.floor(np.asarray(values, dtype=float) + 0.5 + TOLERANCE)
    return np.clip(rounded, LOWEST, HIGHEST)


def check_ratings(frame: pd.DataFrame, *, who: str, key: str, extra: tuple[str, ...] = ()) -> None:
    """Refuse a malformed ratings table with a sentence naming the problem.

    Data conditions (one annotator, no overlap, identical scores) are not errors - the figures
    report them as undefined; a table that breaks the contract (missing column, a score outside
    1-5, a duplicated rating, a blank id) is."""
    columns = (ITEM, key, SCORE, *extra)
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{who} table lacks column(s) {missing}; it has {list(frame.columns)}")
    blank = frame[[ITEM, key, *extra]].isna().any(axis=1)
    if blank.any():
        raise ValueError(f"{who} table has {int(blank.sum())} row(s) with a blank id")
    scores = pd.to_numeric(frame[SCORE], errors="coerce")
    bad = scores.isna() | ~scores.isin(LEVELS)
    if bad.any():
        examples = frame.loc[bad, SCORE].head(3).tolist()
        raise ValueError(
            f"{who} scores must be integers 1-5; {int(bad.sum())} are not, e.g. {examples}"
        )
    duplicated = frame.duplicated(subset=[ITEM, key, *extra])
    if duplicated.any():
        raise ValueError(
            f"{who} table rates the same item twice by the same {key} "
            f"({int(duplicated.sum())} duplicate row(s))"
        )


def check_jury(jury: pd.Series) -> None:
    """A jury mean outside 1-5 is a wrong table, not a data condition (NaN = incomplete jury)."""
    values = pd.to_numeric(jury, errors="coerce")
    outside = values.notna() & ((values < LOWEST) | (values > HIGHEST))
    if outside.any():
        raise ValueError(f"jury means must lie in 1-5; {int(outside.sum())} do not")
    if jury.index.has_duplicates:
        raise ValueError("the jury series holds the same item twice")
