"""Clinician-corrected (prediction-powered) scores against ppi-python on unstratified data and
against samplics' survey estimator (and a hand calculation) on a stratified weighted sample."""

import math
import warnings

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from alignment.engine.design import design_variance
from alignment.engine.ppi import Annotated, Population, corrected_score

Z = stats.norm.ppf(0.975)


def _population(jury: np.ndarray, passed: np.ndarray) -> Population:
    return Population(len(jury), float(jury.sum()), float((jury**2).sum()), int(passed.sum()))


def _annotated(clinician, jury, *, weights=None, strata=None, threshold=3.0) -> Annotated:
    n = len(clinician)
    return Annotated(
        clinician=np.asarray(clinician, dtype=float),
        jury=np.asarray(jury, dtype=float),
        clinician_pass=(np.asarray(clinician) >= threshold).astype(float),
        jury_pass=(np.asarray(jury) >= threshold).astype(float),
        weights=np.ones(n) if weights is None else np.asarray(weights, dtype=float),
        strata=np.array(["all"] * n) if strata is None else np.asarray(strata),
        ratings=2 * n,
    )


def _unstratified(seed=0, n=60, big_n=900):
    rng = np.random.default_rng(seed)
    quality = rng.uniform(1, 5, big_n)
    jury = np.clip(np.round(3 * (quality + rng.normal(0.4, 0.6, big_n))) / 3, 1, 5)
    sample = rng.choice(big_n, n, replace=False)
    clinician = np.clip(np.round(2 * (quality[sample] + rng.normal(0, 0.5, n))) / 2, 1, 5)
    return jury, sample, clinician


def _half_width(interval) -> float:
    low, high = (float(np.squeeze(bound)) for bound in interval)
    return (high - low) / 2


def test_the_point_equals_ppi_python_on_an_unstratified_sample():
    jury, sample, clinician = _unstratified()
    result = corrected_score(_population(jury, jury >= 3), _annotated(clinician, jury[sample]))
    expected = ppi_mean_pointestimate(clinician, jury[sample], jury, lam=1)
    assert result.corrected_mean.value == pytest.approx(float(np.squeeze(expected)), abs=1e-12)
    assert result.jury_mean.value == pytest.approx(jury.mean(), abs=1e-12)


def test_the_interval_is_ppi_pythons_with_the_rectifier_divided_by_n_minus_1():
    jury, sample, clinician = _unstratified(seed=1)
    n = len(sample)
    result = corrected_score(_population(jury, jury >= 3), _annotated(clinician, jury[sample]))
    # ppi-python's two terms, each alone: the imputed term (no rectifier when Y = Yhat) and
    # the rectifier (no imputed spread when the unlabelled predictions are constant).
    imputed = _half_width(ppi_mean_ci(jury[sample], jury[sample], jury, alpha=0.05, lam=1))
    rectifier = _half_width(
        ppi_mean_ci(clinician, jury[sample], np.full(len(jury), 3.0), alpha=0.05, lam=1)
    )
    # ppi-python divides the rectifier's variance by n, the survey estimator by n - 1.
    expected = math.sqrt(imputed**2 + rectifier**2 * n / (n - 1))
    ours = (result.corrected_mean.high - result.corrected_mean.low) / 2
    assert ours == pytest.approx(expected, rel=1e-12)
    # ...which is ppi-python's whole interval to within that factor.
    whole = _half_width(ppi_mean_ci(clinician, jury[sample], jury, alpha=0.05, lam=1))
    assert whole < ours < whole * math.sqrt(n / (n - 1))


def test_the_pass_rate_is_corrected_the_same_way_with_indicators():
    jury, sample, clinician = _unstratified(seed=2)
    result = corrected_score(_population(jury, jury >= 3), _annotated(clinician, jury[sample]))
    expected = ppi_mean_pointestimate(
        (clinician >= 3).astype(float), (jury[sample] >= 3).astype(float),
        (jury >= 3).astype(float), lam=1,
    )  # fmt: skip
    assert result.corrected_pass.value == pytest.approx(float(np.squeeze(expected)), abs=1e-12)
    assert result.jury_pass.value == pytest.approx((jury >= 3).mean())


def test_the_weighted_correction_and_its_variance_equal_samplics():
    from samplics.estimation import TaylorEstimator
    from samplics.utils.types import PopParam

    rng = np.random.default_rng(3)
    n = 48
    strata = np.repeat(["m|1", "m|3", "m|5", "m|2"], 12)
    weights = np.where(strata == "m|3", 40.0, 1.5) * rng.uniform(0.8, 1.2, n)
    difference = rng.normal(-0.4, 0.8, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        taylor = TaylorEstimator(PopParam.mean)
        taylor.estimate(y=difference, samp_weight=weights, stratum=strata)
    jury = rng.uniform(1, 5, n)
    result = corrected_score(
        Population(500, 1500.0, 5000.0, 250),
        _annotated(jury + difference, jury, weights=weights, strata=strata),
    )
    assert result.correction.value == pytest.approx(float(taylor.point_est), abs=1e-12)
    variance = design_variance(difference, weights, strata)
    assert variance == pytest.approx(float(taylor.variance), rel=1e-10)
    # The whole interval by hand: the population term plus the design variance.
    jury_variance = (5000.0 / 500 - 3.0**2) / 500
    se = math.sqrt(jury_variance + variance)
    assert result.corrected_mean.value == pytest.approx(3.0 + float(taylor.point_est))
    assert result.corrected_mean.high - result.corrected_mean.value == pytest.approx(Z * se)


def test_a_biased_jury_is_corrected_back_to_the_clinicians():
    rng = np.random.default_rng(4)
    big_n = 3000
    truth = np.clip(rng.normal(3.2, 0.9, big_n), 1, 5)  # what clinicians would say
    jury = np.clip(truth + 0.6 + rng.normal(0, 0.3, big_n), 1, 5)  # a lenient jury
    bins = np.clip(np.floor(jury + 0.5), 1, 5).astype(int)
    chosen, weights, strata = [], [], []
    for b in range(1, 6):  # a stratified sample: 12 per bin, whatever the bin's size
        members = np.flatnonzero(bins == b)
        take = rng.choice(members, min(12, len(members)), replace=False)
        chosen += list(take)
        weights += [len(members) / len(take)] * len(take)
        strata += [str(b)] * len(take)
    chosen = np.array(chosen)
    result = corrected_score(
        _population(jury, jury >= 3),
        _annotated(truth[chosen], jury[chosen], weights=weights, strata=strata),
    )
    target = truth.mean()
    assert not result.jury_mean.low <= target <= result.jury_mean.high
    assert result.corrected_mean.low <= target <= result.corrected_mean.high
    assert result.correction.value < -0.3


def test_without_an_annotated_conversation_the_correction_says_why():
    jury = np.array([3.0, 4.0, 5.0])
    result = corrected_score(_population(jury, jury >= 3), _annotated([], []))
    assert result.jury_mean.value == pytest.approx(4.0)
    assert result.corrected_mean.value is None
    assert "no conversation of this model has a clinician score" in result.corrected_mean.undefined
    empty = corrected_score(Population(0, 0.0, 0.0, 0), _annotated([3.0], [3.0]))
    assert empty.jury_mean.value is None and empty.corrected_pass.value is None


def test_one_annotated_conversation_gives_a_value_without_an_interval():
    jury = np.array([3.0, 4.0, 5.0])
    result = corrected_score(_population(jury, jury >= 3), _annotated([2.0], [4.0]))
    assert result.corrected_mean.value == pytest.approx(2.0)
    assert result.corrected_mean.low is None
