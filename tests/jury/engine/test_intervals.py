"""Figures on a bounded scale keep to it, and an interval that says little says why."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jury.engine.intervals import SCORE, SHARE, bounded, interval_note, normal_interval

FINITE = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=500, deadline=None)
@given(
    value=FINITE,
    se=st.one_of(st.floats(0, 1e3), st.just(math.nan)),
    n=st.integers(1, 1000),
    scale=st.sampled_from([SCORE, SHARE]),
)
def test_a_normal_interval_keeps_its_value_and_bounds_on_the_scale(value, se, n, scale):
    result = normal_interval(value, se, scale=scale, quantile=1.96, n=n)
    assert scale.low <= result.value <= scale.high
    if result.low is None:
        assert result.high is None and result.note
    else:
        assert scale.low <= result.low <= result.high <= scale.high
        if result.high - result.low <= 1e-9:
            assert result.note  # zero width always says why
    if not scale.low <= value <= scale.high:
        assert "lies outside" in result.note


def test_an_interval_inside_the_scale_is_left_as_it_is():
    result = normal_interval(3.2, 0.1, scale=SCORE, quantile=2.0, n=40)
    assert (result.value, result.low, result.high, result.note) == (
        3.2, pytest.approx(3.0), pytest.approx(3.4), ""
    )  # fmt: skip


def test_an_interval_past_the_end_is_cut_and_says_so():
    # The independent check found "98.3% [95.1%, 101.6%]".
    result = normal_interval(0.983, 0.0166, scale=SHARE, quantile=1.96, n=60)
    assert result.high == 1.0 and result.low == pytest.approx(0.983 - 1.96 * 0.0166)
    assert result.note == "interval cut at the end of 0-100%"


def test_an_estimate_outside_the_scale_is_shown_at_its_end():
    result = bounded(1.967, None, None, scale=SHARE, n=1)
    assert result.value == 1.0 and result.low is None
    assert result.note == (
        "the estimate, 196.7%, lies outside 0-100% and is shown at its end; "
        "no interval: one conversation"
    )


@pytest.mark.parametrize(
    ("n", "low", "high", "note"),
    [
        (1, math.nan, math.nan, "no interval: one conversation"),
        (0, math.nan, math.nan, "no conversation"),
        (1, 4.5, 4.5, "zero width: one conversation"),
        (12, 4.5, 4.5, "zero width: every conversation has the same value"),
        (12, 4.2, 4.6, ""),
    ],
)
def test_a_missing_or_zero_width_interval_says_why(n, low, high, note):
    assert interval_note(n, low, high) == note
