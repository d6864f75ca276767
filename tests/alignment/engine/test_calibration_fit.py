"""Fitting the jury to clinicians, cross-fitted: what is fitted, and that it never sees the
conversation it scores."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine import calibration
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE

JUDGES = ("judge/a", "judge/b")
BIAS = {"safety": 1.0, "workflow": -0.6}


def study(n: int = 300, seed: int = 0, noise_judge_b: bool = False):
    """Two judges (b one point stricter, or pure noise) and three clinicians a conversation who
    score the jury mean plus a known bias per rubric plus noise."""
    rng = np.random.default_rng(seed)
    items = np.arange(1, n + 1)
    judges, clinicians = [], []
    for rubric, bias in BIAS.items():
        a = np.clip(rng.integers(1, 5, n) + rng.choice([0, 0, 1], n), 1, 5)
        b = rng.integers(1, 6, n) if noise_judge_b else np.clip(a - 1, 1, 5)
        for judge, scores in zip(JUDGES, (a, b), strict=True):
            judges.append(
                pd.DataFrame({ITEM: items, RUBRIC: rubric, "judge_model": judge, SCORE: scores})
            )
        centre = a + bias if noise_judge_b else (a + b) / 2 + bias
        for rater in range(3):
            value = np.clip(np.round(centre + rng.normal(0, 0.5, n)), 1, 5).astype(int)
            clinicians.append(
                pd.DataFrame({ITEM: items, RUBRIC: rubric, RATER: rater, SCORE: value})
            )
    return pd.concat(judges, ignore_index=True), pd.concat(clinicians, ignore_index=True)


def held_out(variant, judges, clinicians, folds):
    table = calibration.cross_fit(judges, clinicians, variant=variant, folds=folds)
    return table.set_index([ITEM, RUBRIC])[JURY]


def test_folds_are_balanced_deterministic_and_cover_every_item():
    folds = calibration.assign_folds(range(1, 103), folds=5, seed=4)
    sizes = pd.Series(folds).value_counts()
    assert set(folds) == set(range(1, 103)) and sizes.max() - sizes.min() <= 1
    assert folds == calibration.assign_folds(list(reversed(range(1, 103))), folds=5, seed=4)
    with pytest.raises(ValueError, match="two folds"):
        calibration.assign_folds([1, 2], folds=1)


NUMERIC = [key for key, variant in calibration.VARIANTS.items() if not variant.needs_judging]


@pytest.mark.parametrize("variant", NUMERIC)
def test_a_conversations_own_clinician_scores_never_reach_its_calibrated_score(variant):
    judges, clinicians = study()
    folds = calibration.assign_folds(clinicians[ITEM].unique())
    before = held_out(variant, judges, clinicians, folds)
    for item in (7, 150):
        # Turn its clinicians' scores upside down: only other conversations' scores may move.
        changed = clinicians.copy()
        rows = changed[ITEM] == item
        changed.loc[rows, SCORE] = 6 - changed.loc[rows, SCORE]
        after = held_out(variant, judges, changed, folds)
        assert after.loc[item].equals(before.loc[item]), variant
        if variant != "current":
            assert not after.equals(before)  # the change did reach the other folds' fits


def test_fold_examples_come_only_from_other_folds_and_cover_the_levels():
    _, clinicians = study(n=200)
    folds = calibration.assign_folds(clinicians[ITEM].unique())
    feedback = {(12, "safety"): "checked the medicines before booking"}
    for fold, fitted in calibration.fold_examples(
        clinicians, folds=folds, feedback=feedback
    ).items():
        for rubric in BIAS:
            examples = fitted.examples(rubric)
            assert 1 <= len(examples) <= calibration.EXAMPLES_PER_RUBRIC
            assert all(folds[e.conversation_id] != fold for e in examples)
            levels = [e.score for e in examples]
            assert len(set(levels)) >= 3 and levels == sorted(levels)
    chosen = calibration.fit(*study(n=200), variant="examples", feedback=feedback)
    assert all(e.score in range(1, 6) for r in BIAS for e in chosen.examples(r))


@pytest.mark.parametrize("variant", ["judge_maps", "aggregate_map", "weights", "weights_map"])
def test_calibration_removes_a_known_bias_on_held_out_conversations(variant):
    judges, clinicians = study(n=400)
    folds = calibration.assign_folds(clinicians[ITEM].unique())
    current = calibration.evaluate(
        clinicians,
        calibration.cross_fit(judges, clinicians, variant="current", folds=folds),
        resamples=200,
    )
    fitted = calibration.evaluate(
        clinicians,
        calibration.cross_fit(judges, clinicians, variant=variant, folds=folds),
        resamples=200,
    )
    for rubric in BIAS:
        before = current[rubric].agreement.mean_signed_diff.value
        after = fitted[rubric].agreement.mean_signed_diff.value
        assert abs(before) > 0.4 and abs(after) < 0.2 * abs(before), (rubric, before, after)
        assert (
            fitted[rubric].agreement.jury_adjacent.value
            >= current[rubric].agreement.jury_adjacent.value
        )
        assert fitted[rubric].alt.n_items > 0


def test_judge_weights_give_a_judge_with_no_signal_next_to_no_weight():
    judges, clinicians = study(n=400, noise_judge_b=True)
    fitted = calibration.fit(judges, clinicians, variant="weights")
    for rubric in BIAS:
        weights = fitted.rubric(rubric).weights
        assert weights["judge/a"] > 0.7 and weights["judge/b"] < 0.1, weights


def test_too_few_training_conversations_fit_nothing():
    judges, clinicians = study(n=4)
    assert calibration.fit(judges, clinicians, variant="weights_map").is_identity


def test_an_examples_variant_is_measured_by_judging_again_not_by_cross_fit():
    judges, clinicians = study(n=20)
    with pytest.raises(ValueError, match="judging again"):
        calibration.cross_fit(judges, clinicians, variant="examples", folds={1: 0})
    with pytest.raises(ValueError, match="unknown calibration variant"):
        calibration.fit(judges, clinicians, variant="magic")


def test_the_learning_curve_grows_to_the_whole_training_set_and_improves():
    judges, clinicians = study(n=300)
    folds = calibration.assign_folds(clinicians[ITEM].unique())
    curve = calibration.learning_curve(judges, clinicians, variant="weights_map", folds=folds)
    assert list(curve["n_train"].unique()) == [10, 20, 40, 80, 160, 240]
    assert set(curve[RUBRIC]) == set(BIAS) and (curve["n_items"] == 300).all()
    mean_error = curve.groupby("n_train")["mean_abs_diff"].mean()
    assert mean_error.iloc[-1] < mean_error.iloc[0]
