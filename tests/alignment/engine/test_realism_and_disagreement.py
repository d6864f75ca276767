"""Realism summary and the disagreement ranking."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.disagreement import rank_disagreements
from alignment.engine.realism import realism_summary


def test_realism_summary_gives_mean_sd_top_share_and_n():
    summary = realism_summary([5, 4, 5, 3])
    assert summary == {"mean": 4.25, "sd": pytest.approx(np.std([5, 4, 5, 3], ddof=1)),
                       "top_share": 0.5, "n": 4}  # fmt: skip


def test_realism_summary_of_too_little_data_is_none_not_an_error():
    assert realism_summary([]) == {"mean": None, "sd": None, "top_share": None, "n": 0}
    assert realism_summary([4])["sd"] is None


def test_realism_summary_refuses_a_score_outside_one_to_five():
    with pytest.raises(ValueError, match="1-5"):
        realism_summary([0, 5])


def test_disagreements_are_ranked_by_distance_with_majors_flagged_and_missing_jury_last():
    clinicians = pd.DataFrame(
        [(1, "safety", "a", 3), (1, "safety", "b", 5), (2, "safety", "a", 1),
         (3, "safety", "a", 4), (1, "triage", "a", 2), (4, "safety", "a", 2)],
        columns=["item", "rubric", "rater", "score"],
    )  # fmt: skip
    jury = pd.DataFrame([(1, "safety", 4.0), (2, "safety", 3.5), (3, "safety", 3.0),
                         (1, "triage", 4.0)], columns=["item", "rubric", "jury"])  # fmt: skip
    ranked = rank_disagreements(clinicians, jury)
    assert list(zip(ranked["item"], ranked["rubric"], strict=True)) == [
        (2, "safety"),
        (1, "triage"),
        (3, "safety"),
        (1, "safety"),
        (4, "safety"),
    ]
    assert ranked["diff"].tolist()[:4] == [2.5, 2.0, -1.0, 0.0]
    assert ranked["major"].tolist() == [True, True, False, False, False]
    assert ranked.loc[0, "clinician_mean"] == 1.0
    assert ranked["n_ratings"].tolist() == [1, 1, 1, 2, 1]
    assert np.isnan(ranked.loc[4, "diff"])
