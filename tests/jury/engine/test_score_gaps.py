"""One definition of "adjacent" (within 1 point) and "major" (2 points or more) for every
report, tolerant of floating point: a jury mean of 7/3 against a clinician mean of 4/3 is one
point apart although 7/3 - 4/3 > 1 in floating point; 13/3 against 7/3 is two points apart
although 13/3 - 7/3 < 2. Each pure consumer is checked on those cases."""

import math

import numpy as np
import pandas as pd
import pytest

from alignment.engine.agreement import rubric_agreement
from alignment.engine.compare import paired_difference
from alignment.engine.disagreement import rank_disagreements
from alignment.engine.judges import judge_agreement
from annotation.engine.round_report import Score, round_report
from jury.engine.score_gaps import at_least, is_adjacent, is_major
from jury.engine.stats import inter_judge_agreement

ONE_POINT = (7 / 3, 4 / 3)  # a jury of three (2, 2, 3) and three clinicians (1, 1, 2)
TWO_POINTS = (13 / 3, 7 / 3)  # jury (4, 4, 5), clinicians (2, 2, 3)


def test_floating_point_puts_the_cases_on_the_wrong_side_of_the_thresholds():
    assert ONE_POINT[0] - ONE_POINT[1] > 1 and TWO_POINTS[0] - TWO_POINTS[1] < 2


def test_the_definition_counts_one_point_as_adjacent_and_two_points_as_major():
    assert is_adjacent(ONE_POINT[0] - ONE_POINT[1]) and is_adjacent(ONE_POINT[1] - ONE_POINT[0])
    assert is_major(TWO_POINTS[0] - TWO_POINTS[1]) and is_major(TWO_POINTS[1] - TWO_POINTS[0])
    assert not is_adjacent(1.01) and not is_major(1.99)
    assert not is_adjacent(math.nan) and not is_major(math.nan)
    gaps = pd.Series([ONE_POINT[0] - ONE_POINT[1], 1.5, np.nan])
    assert is_adjacent(gaps).tolist() == [True, False, False]
    assert is_major(np.array([2.0, 1.0])).tolist() == [True, False]
    assert at_least(0.4999999999999999, 0.5) and not at_least(0.49, 0.5)


def clinicians(item_scores: dict[int, tuple[int, ...]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(item, f"c{n}", score) for item, scores in item_scores.items()
         for n, score in enumerate(scores)],
        columns=["item", "rater", "score"],
    )  # fmt: skip


def test_the_agreement_engine_counts_them_as_adjacent_and_major():
    ratings = clinicians({1: (1, 1, 2), 2: (2, 2, 3)})
    jury = pd.Series({1: ONE_POINT[0], 2: TWO_POINTS[0]})
    figures = rubric_agreement(ratings, jury, resamples=10)
    assert figures.jury_adjacent.value == 0.5  # item 1 adjacent, item 2 two points off
    assert figures.major_disagreements == 1


def test_the_jury_comparison_counts_the_one_point_case_as_adjacent():
    ratings = clinicians({1: (1, 1, 2)})
    near, far = pd.Series({1: ONE_POINT[0]}), pd.Series({1: 5.0})
    assert paired_difference(ratings, near, far, metric="adjacent", resamples=10).value == 1.0


def test_the_disagreement_ranking_marks_the_two_point_case_major():
    ratings = clinicians({1: (2, 2, 3)}).assign(rubric="safety")
    jury = pd.DataFrame({"item": [1], "rubric": ["safety"], "jury": [TWO_POINTS[0]]})
    assert rank_disagreements(ratings, jury)["major"].tolist() == [True]


def test_a_judge_one_point_from_the_clinician_mean_does_not_err():
    judges = pd.DataFrame({"item": [1, 1], "judge": [0, 1], "score": [2, 3]})
    result = judge_agreement(judges, pd.Series({1: 1.0}), resamples=10)
    alone = {j.judge: j.adjacent.value for j in result.judges}
    assert alone == {0: 1.0, 1: 0.0}
    assert result.pairs[0].adjacent.value == 1.0  # the two judges are one point apart


def test_the_round_report_reads_a_mean_difference_of_half_a_point_as_a_tendency():
    # Scores 2 and 3 against jury means 5/3 and 7/3: the mean difference is exactly +0.5,
    # 0.4999999999999999 in floating point.
    scores = [Score("ann", "a1", 1, "safety", 2), Score("ann", "a2", 2, "safety", 3)]
    report = round_report(scores, {(1, "safety"): 5 / 3, (2, "safety"): 7 / 3})
    (tendency,) = report.annotators[0].tendencies
    assert tendency.mean_difference < 0.5 and tendency.label == "over-scores"


def test_the_round_report_counts_two_points_from_the_jury_as_major():
    scores = [Score("ann", "a1", 1, "safety", 5), Score("ann", "a2", 2, "safety", 4)]
    report = round_report(scores, {(1, "safety"): 3.0, (2, "safety"): 2.5})
    assert report.annotators[0].major_disagreements == 1
    assert [d.item for d in report.disagreements] == [1]


@pytest.mark.parametrize(("scores", "adjacent"), [((2, 3), 1.0), ((2, 4), 0.0)])
def test_inter_judge_agreement_counts_judges_one_point_apart_as_adjacent(scores, adjacent):
    frame = pd.DataFrame({"rubric": "safety", "conversation_id": 1, "judge": ["a", "b"],
                          "score": [float(s) for s in scores]})  # fmt: skip
    assert inter_judge_agreement(frame).loc["safety", "adjacent_agreement"] == adjacent
