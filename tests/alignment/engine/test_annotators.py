"""Each clinician's agreement with the others (leave one out) and with the jury, by period, and
drift flags between rounds - against a rating-by-rating computation."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.annotators import OVERALL, PERIOD, annotator_quality, drift_flags
from alignment.engine.bootstrap import Estimate
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE

from .conftest import synthetic


def _study(seed=0):
    long, jury = synthetic(n_items=90, n_raters=4, per_item=3, seed=seed, rubrics=("a", "b"))
    weeks = np.where(long[ITEM] < 45, "2026-W01", "2026-W02")
    return long.assign(**{PERIOD: weeks}), jury


def _by_hand(long: pd.DataFrame, jury: pd.DataFrame) -> dict:
    """rater -> (peer hits, peer n, peer diff sum, jury hits, jury n, jury diff sum)."""
    means = jury.set_index([ITEM, RUBRIC])[JURY]
    out = {}
    for row in long.itertuples(index=False):
        same = long[(long[ITEM] == row.item) & (long[RUBRIC] == row.rubric)]
        others = same[same[RATER] != row.rater][SCORE]
        tally = out.setdefault(row.rater, [0, 0, 0.0, 0, 0, 0.0])
        if len(others):
            gap = row.score - others.mean()
            tally[0] += abs(gap) <= 1 + 1e-9
            tally[1] += 1
            tally[2] += gap
        if (row.item, row.rubric) in means.index:
            gap = row.score - means[(row.item, row.rubric)]
            tally[3] += abs(gap) <= 1 + 1e-9
            tally[4] += 1
            tally[5] += gap
    return out


def test_each_clinician_is_compared_with_the_others_and_the_jury_rating_by_rating():
    long, jury = _study()
    overall = long.assign(**{PERIOD: OVERALL})
    result = {f.rater: f for f in annotator_quality(overall, jury, resamples=200)}
    for rater, (ph, pn, pd_, jh, jn, jd) in _by_hand(long, jury).items():
        figure = result[rater]
        assert figure.peer_agreement.value == pytest.approx(ph / pn)
        assert figure.peer_bias.value == pytest.approx(pd_ / pn)
        assert figure.jury_agreement.value == pytest.approx(jh / jn)
        assert figure.jury_bias.value == pytest.approx(jd / jn)
        assert figure.peer_agreement.n_ratings == pn and figure.ratings == jn
        low, high = figure.peer_bias.low, figure.peer_bias.high
        assert low < figure.peer_bias.value < high


def test_periods_split_a_clinicians_ratings():
    long, jury = _study(seed=1)
    weekly = annotator_quality(long, jury, resamples=0)
    assert {f.period for f in weekly} == {"2026-W01", "2026-W02"}
    totals = long.groupby(RATER).size()
    for rater in totals.index:
        assert sum(f.ratings for f in weekly if f.rater == rater) == totals[rater]


def test_a_clinician_alone_on_their_conversations_has_no_peer_figure():
    long = pd.DataFrame(
        [(1, "a", "x", 3, OVERALL), (2, "a", "y", 4, OVERALL)],
        columns=[ITEM, RUBRIC, RATER, SCORE, PERIOD],
    )
    jury = pd.DataFrame([(1, "a", 3.0)], columns=[ITEM, RUBRIC, JURY])
    result = {f.rater: f for f in annotator_quality(long, jury, resamples=10)}
    assert result["x"].peer_agreement.value is None
    assert "no other clinician" in result["x"].peer_agreement.undefined
    assert result["x"].jury_agreement.value == 1.0
    assert result["y"].jury_bias.value is None


def _round(peer: float | None, jury: float | None = 0.0):
    def figure(value):
        return Estimate(value, None, None, 5, 5, "" if value is not None else "none")

    blank = figure(0.5)
    return {
        "A": type("F", (), {"peer_bias": figure(peer), "jury_bias": figure(jury),
                            "peer_agreement": blank, "jury_agreement": blank})()
    }  # fmt: skip


def test_a_bias_that_moves_more_than_the_setting_between_rounds_is_flagged():
    rounds = [("Round 1", _round(0.6)), ("Round 2", _round(-0.1)), ("Round 3", _round(0.2))]
    flags = drift_flags(rounds, threshold=0.5)
    assert [(f.measure, f.before, f.after) for f in flags] == [("peer_bias", "Round 1", "Round 2")]
    assert flags[0].moved == pytest.approx(-0.7)
    assert drift_flags(rounds, threshold=0.8) == []


def test_a_round_without_the_figure_is_passed_over():
    rounds = [("Round 1", _round(0.9)), ("Round 2", _round(None)), ("Round 3", _round(0.0))]
    flags = drift_flags(rounds, threshold=0.5)
    assert [(f.before, f.after) for f in flags] == [("Round 1", "Round 3")]
