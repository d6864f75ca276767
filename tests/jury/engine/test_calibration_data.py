"""What a calibrated jury stores, and its arithmetic on judge scores."""

import math

import numpy as np
import pytest

from jury.engine.calibration import (
    IDENTITY,
    Calibration,
    CalibrationError,
    Example,
    RubricCalibration,
    ScoreMap,
)


def test_a_score_map_interpolates_and_is_flat_beyond_its_ends():
    mapping = ScoreMap((2.0, 4.0), (3.0, 5.0))
    assert mapping.apply(3.0) == pytest.approx(4.0)
    assert mapping.apply(1.0) == 3.0 and mapping.apply(5.0) == 5.0
    assert np.isnan(mapping.apply(np.array([np.nan, 2.0]))[0])


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ((1.0, 1.0), (2.0, 3.0), "increase"),
        ((1.0, 2.0), (3.0, 2.0), "decrease"),
        ((), (), "at least"),
    ],
)
def test_a_malformed_score_map_is_refused_with_the_reason(x, y, message):
    with pytest.raises(CalibrationError, match=message):
        ScoreMap(x, y)


def test_maps_then_weights_then_the_aggregate_map_then_the_scale():
    calibration = RubricCalibration(
        judge_maps={"a": ScoreMap((1.0, 5.0), (2.0, 5.0))},
        weights={"a": 0.5, "b": 0.5},
        intercept=0.25,
        aggregate_map=ScoreMap((1.0, 5.0), (1.0, 5.0)),
    )
    # a: 3 -> 3.5; 0.25 + 0.5 * 3.5 + 0.5 * 4 = 4.0
    assert calibration.combine({"a": 3, "b": 4}) == pytest.approx(4.0)
    assert calibration.combine({"a": 3, "b": None}) is None
    assert RubricCalibration(weights={"a": 2.0}).combine({"a": 5}) == 5.0  # clipped to 5


def test_nothing_fitted_is_the_plain_mean_of_the_judges():
    assert IDENTITY.combine({"a": 2, "b": 5}) == 3.5
    assert Calibration().is_identity and Calibration().combine("any", {"a": 4}) == 4


def test_the_vectorised_combination_equals_the_scalar_one():
    calibration = RubricCalibration(
        judge_maps={"b": ScoreMap((1.0, 3.0, 5.0), (1.5, 3.5, 4.5))},
        weights={"a": 0.3, "b": 0.9},
        intercept=-0.2,
    )
    rng = np.random.default_rng(1)
    rows = rng.integers(1, 6, size=(50, 2)).astype(float)
    vector = calibration.combine_matrix(rows, ["a", "b"])
    scalar = [calibration.combine({"a": a, "b": b}) for a, b in rows]
    assert np.allclose(vector, scalar)


def test_a_calibration_survives_its_json_round_trip():
    calibration = Calibration(
        {
            "clinical_safety": RubricCalibration(
                judge_maps={"offline/standard": ScoreMap((1.0, 3.0), (2.0, 4.0))},
                examples=(Example(12, 4, "asked about the medicines first"),),
            ),
            "triage_quality": RubricCalibration(weights={"x": 1.0}, intercept=0.5),
        }
    )
    assert Calibration.from_dict(calibration.to_dict()) == calibration
    assert calibration.parts == ("examples", "judge_maps", "weights")
    assert calibration.example_conversations() == {12}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"r": {"weights": {"a": -1}}}, ">= 0"),
        ({"r": {"weights": {"a": 0}}}, "positive"),
        ({"r": {"examples": [{"conversation_id": 1, "score": 9}]}}, "1-5"),
        ({"r": {"examples": [{"score": 3}]}}, "conversation_id"),
        ({"r": {"colour": "red"}}, "unknown"),
        ({"r": {"aggregate_map": {"x": [1]}}}, "x and y"),
        ({"r": {"intercept": math.inf, "weights": {"a": 1}}}, "finite"),
        (["not", "an", "object"], "object"),
    ],
)
def test_a_malformed_stored_calibration_names_what_is_wrong(data, message):
    with pytest.raises(CalibrationError, match=message):
        Calibration.from_dict(data)
