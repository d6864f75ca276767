"""Paired difference between two juries on the same conversations."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.agreement import rubric_agreement
from alignment.engine.compare import paired_difference

from .conftest import clinicians, synthetic


def _study():
    long, jury_long = synthetic(n_items=150, seed=2)
    table = long.drop(columns="rubric")
    close = jury_long.set_index("item")["jury"]
    far = (close + 1.5).clip(upper=5.0)
    return table, close, far


@pytest.mark.parametrize("metric", ["adjacent", "alpha_with_jury", "mean_signed_diff"])
def test_the_difference_equals_the_difference_of_the_two_figures(metric):
    table, close, far = _study()
    figure = {"adjacent": "jury_adjacent", "alpha_with_jury": "alpha_with_jury",
              "mean_signed_diff": "mean_signed_diff"}[metric]  # fmt: skip
    a = getattr(rubric_agreement(table, close, resamples=0), figure).value
    b = getattr(rubric_agreement(table, far, resamples=0), figure).value
    result = paired_difference(table, close, far, metric=metric, resamples=300, seed=1)
    assert result.value == pytest.approx(a - b)
    assert result.low <= result.value <= result.high
    assert result.n_items == 150


def test_a_closer_jury_wins_with_an_interval_clear_of_zero():
    table, close, far = _study()
    result = paired_difference(table, close, far, metric="adjacent", resamples=300)
    assert result.low > 0


def test_the_same_jury_twice_differs_by_exactly_nothing():
    table, close, _ = _study()
    result = paired_difference(table, close, close, metric="adjacent", resamples=100)
    assert (result.value, result.low, result.high) == (0.0, 0.0, 0.0)


def test_only_conversations_both_juries_scored_enter():
    table = clinicians([(1, "a", 3), (2, "a", 4), (3, "a", 2)])
    a = pd.Series({1: 3.0, 2: 4.0, 3: 2.0})
    b = pd.Series({1: 3.0, 2: np.nan})
    result = paired_difference(table, a, b, metric="mean_signed_diff", resamples=20)
    assert (result.n_items, result.n_ratings) == (1, 1)
    nothing = paired_difference(table, a, pd.Series({9: 3.0}), metric="adjacent", resamples=20)
    assert nothing.value is None and "both juries" in nothing.undefined


def test_an_unknown_metric_is_refused():
    table, close, far = _study()
    with pytest.raises(ValueError, match="metric"):
        paired_difference(table, close, far, metric="kappa")
