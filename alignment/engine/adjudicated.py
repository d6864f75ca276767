"""Clinician ratings with adjudicated scores in place: the "jury vs adjudicated" figures.

Where a senior clinician adjudicated an (item, rubric), their score is the clinician value of
that item: its ratings are replaced by one rating of the adjudicator (rater ADJUDICATOR), so
every jury-clinician figure of the engine (adjacent agreement, mean difference, majors) reads
it as the clinicians' mean. Only items that have counted ratings under the report's filters
are replaced (nothing is added), so both columns rest on the same conversations. Pure: no
Django.
"""

from __future__ import annotations

import pandas as pd

from alignment.engine.frames import ITEM, RATER, RUBRIC, SCORE

ADJUDICATOR = -1  # the rater id of every adjudicated score
ADJUDICATED_COLUMNS = [ITEM, RUBRIC, SCORE]


def with_adjudicated(clinicians_long: pd.DataFrame, adjudicated: pd.DataFrame) -> pd.DataFrame:
    """`clinicians_long` (item, rubric, rater, score) with each adjudicated (item, rubric)
    that has ratings reduced to the adjudicated score."""
    ratings = clinicians_long[[ITEM, RUBRIC, RATER, SCORE]]
    if adjudicated.empty or ratings.empty:
        return ratings.copy()
    keys = pd.MultiIndex.from_frame(ratings[[ITEM, RUBRIC]])
    settled = pd.MultiIndex.from_frame(adjudicated[[ITEM, RUBRIC]])
    replaced = keys.isin(settled)
    rated = settled.isin(keys)
    scores = adjudicated.loc[rated, ADJUDICATED_COLUMNS].assign(**{RATER: ADJUDICATOR})
    combined = pd.concat([ratings.loc[~replaced], scores[[ITEM, RUBRIC, RATER, SCORE]]])
    return combined.astype({ITEM: "int64", RATER: "int64", SCORE: "int64"}).reset_index(drop=True)


def adjudicated_counts(clinicians_long: pd.DataFrame, adjudicated: pd.DataFrame) -> dict:
    """rubric id -> adjudicated conversations that replace rated ones."""
    if adjudicated.empty or clinicians_long.empty:
        return {}
    keys = pd.MultiIndex.from_frame(clinicians_long[[ITEM, RUBRIC]].drop_duplicates())
    settled = adjudicated[pd.MultiIndex.from_frame(adjudicated[[ITEM, RUBRIC]]).isin(keys)]
    return settled.groupby(RUBRIC).size().to_dict()
