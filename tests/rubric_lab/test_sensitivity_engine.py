"""Sensitivity measures checked against scikit-learn and scipy on fixed data."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from rubric_lab.engine import sensitivity

REFERENCE = np.array([5, 4, 4, 3, 5, 2, 4, 3, 5, 4, 3.5, 4.5])
PERTURBED = np.array([3, 4, 2, 3, 1, 2, 5, 1, 2, 3, 3.5, 4.0])


def scipy_interval(statistic, seed):
    result = stats.bootstrap(
        (REFERENCE, PERTURBED), statistic, paired=True, vectorized=False, n_resamples=1000,
        method="percentile", rng=np.random.default_rng(seed),
    )  # fmt: skip
    return result.confidence_interval.low, result.confidence_interval.high


def test_the_point_estimates_are_the_plain_rates_and_sklearns_auroc():
    result = sensitivity.sensitivity(REFERENCE, PERTURBED)

    assert result.n == 12
    assert result.win_rate.value == pytest.approx(7 / 12)
    assert result.tie_rate.value == pytest.approx(4 / 12)
    assert result.mean_delta.value == pytest.approx(np.mean(REFERENCE - PERTURBED))
    labels = np.r_[np.ones(12), np.zeros(12)]
    assert result.auroc.value == pytest.approx(roc_auc_score(labels, np.r_[REFERENCE, PERTURBED]))


@pytest.mark.parametrize(
    ("measure", "statistic"),
    [
        ("mean_delta", lambda r, p: np.mean(r - p)),
        ("win_rate", lambda r, p: np.mean(r > p)),
        ("tie_rate", lambda r, p: np.mean(r == p)),
        (
            "auroc",
            lambda r, p: roc_auc_score(np.r_[np.ones(len(r)), np.zeros(len(p))], np.r_[r, p]),
        ),
    ],
)
def test_the_intervals_equal_scipys_percentile_bootstrap_with_the_same_seed(measure, statistic):
    result = sensitivity.sensitivity(REFERENCE, PERTURBED, seed=7)

    low, high = scipy_interval(statistic, seed=7)
    estimate = getattr(result, measure)
    assert (estimate.low, estimate.high) == pytest.approx((low, high))


def test_the_vectorised_auroc_of_each_resample_equals_sklearns():
    rows = sensitivity.resample_indices(len(REFERENCE), resamples=50, seed=3)
    fast = sensitivity.auroc_rows(REFERENCE[rows], PERTURBED[rows])
    for row, value in zip(rows, fast, strict=True):
        labels = np.r_[np.ones(len(row)), np.zeros(len(row))]
        scores = np.r_[REFERENCE[row], PERTURBED[row]]
        assert value == pytest.approx(roc_auc_score(labels, scores))


def test_the_same_seed_gives_the_same_intervals_and_another_seed_others():
    first = sensitivity.sensitivity(REFERENCE, PERTURBED, seed=1)
    assert first == sensitivity.sensitivity(REFERENCE, PERTURBED, seed=1)
    assert first.mean_delta != sensitivity.sensitivity(REFERENCE, PERTURBED, seed=2).mean_delta


def test_identical_scores_give_chance_auroc_and_all_ties():
    result = sensitivity.sensitivity([3, 3, 3], [3, 3, 3])
    assert result.auroc.value == 0.5 and result.tie_rate.value == 1 and result.win_rate.value == 0


def test_unpaired_or_empty_scores_are_refused():
    with pytest.raises(ValueError, match="pairs"):
        sensitivity.sensitivity([1, 2], [1])
    with pytest.raises(ValueError, match="at least one"):
        sensitivity.sensitivity([], [])


def test_pairwise_scores_average_both_orders():
    assert sensitivity.pairwise_scores(1.0, 0.0) == (0.5, 0.5)
    assert sensitivity.pairwise_scores(1.0, 1.0) == (1.0, 0.0)
    assert sensitivity.pairwise_scores(0.5, 1.0) == (0.75, 0.25)


def test_position_bias_shows_a_judge_that_prefers_whatever_comes_first():
    # The reference wins whenever it is shown first and loses whenever it is shown second.
    biased = sensitivity.position_bias([1.0] * 10, [0.0] * 10)
    assert biased.bias.value == 1.0 and biased.first_preferred == 1.0
    fair = sensitivity.position_bias([1.0, 0.5, 1.0], [1.0, 0.5, 1.0])
    assert fair.bias.value == 0.0 and fair.first_preferred == pytest.approx(0.5 + (0 / 3))
