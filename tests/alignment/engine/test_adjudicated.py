"""Adjudicated scores as the clinician value (alignment.engine.adjudicated): the engine's
jury-clinician figures then read the senior clinician's score as the conversation's mean."""

import pandas as pd

from alignment.engine.adjudicated import ADJUDICATOR, adjudicated_counts, with_adjudicated
from alignment.engine.agreement import rubric_agreement
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE


def ratings(rows):
    return pd.DataFrame(rows, columns=[ITEM, RUBRIC, RATER, SCORE])


CLINICIANS = ratings([(1, "s", 10, 1), (1, "s", 11, 3), (2, "s", 10, 3), (2, "s", 11, 3)])
JURY_MEANS = pd.DataFrame([(1, "s", 4.0), (2, "s", 3.0)], columns=[ITEM, RUBRIC, JURY])


def test_an_adjudicated_item_has_one_rating_the_adjudicated_score():
    settled = pd.DataFrame([(1, "s", 4)], columns=[ITEM, RUBRIC, SCORE])
    replaced = with_adjudicated(CLINICIANS, settled)
    one = replaced[replaced[ITEM] == 1]
    assert one[[RATER, SCORE]].values.tolist() == [[ADJUDICATOR, 4]]
    assert replaced[replaced[ITEM] == 2][SCORE].tolist() == [3, 3]  # untouched
    assert adjudicated_counts(CLINICIANS, settled) == {"s": 1}


def test_the_jury_figures_move_to_the_adjudicated_score():
    settled = pd.DataFrame([(1, "s", 4)], columns=[ITEM, RUBRIC, SCORE])
    jury = JURY_MEANS.set_index(ITEM)[JURY]
    by_mean = rubric_agreement(CLINICIANS[[ITEM, RATER, SCORE]], jury, resamples=0)
    adjudicated = with_adjudicated(CLINICIANS, settled)
    by_adjudication = rubric_agreement(adjudicated[[ITEM, RATER, SCORE]], jury, resamples=0)
    # Item 1: clinicians 1 and 3 (mean 2), jury 4: a major disagreement; adjudicated 4.
    assert by_mean.jury_adjacent.value == 0.5 and by_mean.major_disagreements == 1
    assert by_adjudication.jury_adjacent.value == 1.0
    assert by_adjudication.major_disagreements == 0
    assert by_mean.mean_signed_diff.value == 1.0 and by_adjudication.mean_signed_diff.value == 0


def test_an_adjudication_of_an_item_without_counted_ratings_adds_nothing():
    settled = pd.DataFrame([(9, "s", 2)], columns=[ITEM, RUBRIC, SCORE])
    assert with_adjudicated(CLINICIANS, settled).equals(CLINICIANS.reset_index(drop=True))
    assert adjudicated_counts(CLINICIANS, settled) == {}
