"""Judge-vs-judge figures and correlated errors on constructed data."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from alignment.engine.judges import judge_agreement

N = 400


def _judges(scores_by_judge: dict) -> pd.DataFrame:
    rows = [(item, judge, int(score)) for judge, scores in scores_by_judge.items()
            for item, score in enumerate(scores)]  # fmt: skip
    return pd.DataFrame(rows, columns=["item", "judge", "score"])


def _study(shared_error: bool, seed: int = 0):
    """Clinician mean 3 everywhere; each judge errs (scores 5) on 30% of conversations -
    the same 30% for every judge when errors are shared, independent draws otherwise."""
    rng = np.random.default_rng(seed)
    common = rng.random(N) < 0.3
    scores = {}
    for judge in range(3):
        wrong = common if shared_error else rng.random(N) < 0.3
        scores[judge] = np.where(wrong, 5, 3)
    return _judges(scores), pd.Series(3.0, index=range(N))


def test_judges_that_err_together_are_flagged_and_count_as_one():
    result = judge_agreement(*_study(shared_error=True), resamples=200)
    pair = result.pairs[0]
    error_rate = 1 - result.judges[0].adjacent.value
    assert pair.both_wrong.value == pytest.approx(
        error_rate
    )  # whenever one errs, so does the other
    assert pair.both_wrong_if_independent.value == pytest.approx(error_rate**2)
    assert pair.error_correlation.value == pytest.approx(1.0)
    assert result.effective_judges.value == pytest.approx(1.0)


def test_independent_judges_err_together_about_as_often_as_chance_predicts():
    result = judge_agreement(*_study(shared_error=False), resamples=200)
    for pair in result.pairs:
        assert pair.both_wrong.value == pytest.approx(pair.both_wrong_if_independent.value,
                                                      abs=0.04)  # fmt: skip
        assert abs(pair.error_correlation.value) < 0.12
    assert result.effective_judges.value > 2.5
    assert result.effective_judges.low <= result.effective_judges.value


def test_judge_pair_figures_match_hand_counts_and_scikit_learn():
    judges = _judges({"j1": [1, 2, 3, 4, 5], "j2": [1, 3, 5, 4, 4]})
    result = judge_agreement(judges, pd.Series([1.0, 2.0, 3.0, 4.0, 5.0]), resamples=50)
    [pair] = result.pairs
    assert pair.adjacent.value == pytest.approx(4 / 5)
    assert pair.exact.value == pytest.approx(2 / 5)
    assert pair.kappa.value == pytest.approx(
        cohen_kappa_score(
            [1, 2, 3, 4, 5], [1, 3, 5, 4, 4], labels=[1, 2, 3, 4, 5], weights="quadratic"
        )  # fmt: skip
    )
    j1, j2 = result.judges
    assert (j1.adjacent.value, j2.adjacent.value) == (1.0, pytest.approx(4 / 5))
    assert j2.mean_signed_diff.value == pytest.approx((0 + 1 + 2 + 0 - 1) / 5)


def test_conversations_without_clinicians_are_counted_and_a_lone_judge_explained():
    judges = _judges({"only": [3, 4, 5]})
    result = judge_agreement(judges, pd.Series({0: 3.0, 1: np.nan}), resamples=20)
    assert (result.n_items, result.n_items_without_clinicians) == (1, 2)
    assert result.effective_judges.undefined == "the jury has a single judge"
    assert result.alpha_judges.undefined == "the jury has a single judge"
    assert result.pairs == []
