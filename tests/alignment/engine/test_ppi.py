"""Clinician-corrected (prediction-powered) scores against ppi-python on unstratified data and
against samplics' survey estimator (and a hand calculation) on a stratified weighted sample."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from alignment.engine.design import design_variance
from alignment.engine.ppi import MIN_ANNOTATED, Annotated, Population, corrected_score

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


def test_one_annotated_conversation_gives_no_corrected_figure_and_names_the_minimum():
    # The independent check's case: the jury passes 59 of 60 conversations; on the one the
    # clinicians annotated the jury failed it and they passed it (197% before).
    jury = np.array([4.0] * 59 + [2.0])
    result = corrected_score(_population(jury, jury >= 3), _annotated([4.0], [2.0]))
    for figure in (result.corrected_mean, result.corrected_pass, result.correction):
        assert figure.value is None and figure.low is None
        assert f"at least {MIN_ANNOTATED}" in figure.undefined and "1 annotated" in figure.undefined
    assert f"at least {MIN_ANNOTATED}" in result.method
    # The jury's own figures stay, inside their scales: the pass rate a count with its Wilson
    # interval (it read 98.3% [95.1%, 101.6%]).
    wilson = stats.binomtest(59, 60).proportion_ci(method="wilson")
    assert result.jury_pass.value == pytest.approx(59 / 60)
    assert (result.jury_pass.low, result.jury_pass.high) == (
        pytest.approx(wilson.low),
        pytest.approx(wilson.high),
    )
    assert 1 <= result.jury_mean.low <= result.jury_mean.high <= 5


def test_a_corrected_figure_past_the_scale_is_cut_at_its_end_and_says_so():
    jury = np.full(400, 4.8)
    jury[:40] = 4.0
    # Ten annotated conversations the jury scored 4 and clinicians 4.6 on average: the jury's
    # 4.72 over the population plus 0.6 lies past 5, and so does most of its interval.
    sample = np.arange(10)
    clinician = np.array([5.0, 5.0, 5.0, 3.0, 5.0, 5.0, 5.0, 5.0, 3.0, 5.0])
    result = corrected_score(_population(jury, jury >= 3), _annotated(clinician, jury[sample]))
    mean = result.corrected_mean
    assert mean.value == 5.0 and mean.high == 5.0 and 1 <= mean.low < 5
    assert "lies outside the 1-5 scale and is shown at its end" in mean.note
    assert "interval cut at the end of the 1-5 scale" in mean.note
    assert "N = 400" in result.method and "n = 10" in result.method
    assert f"shown from n = {MIN_ANNOTATED}" in result.method


def test_every_score_equal_gives_a_zero_width_interval_that_says_why():
    jury = np.full(50, 4.5)
    result = corrected_score(
        _population(jury, jury >= 3), _annotated(np.full(12, 4.5), np.full(12, 4.5))
    )
    for figure in (result.jury_mean, result.corrected_mean):
        assert figure.value == pytest.approx(4.5)
        assert figure.note == "zero width: every conversation has the same value"


SCORES = st.floats(1, 5, allow_nan=False).map(lambda x: round(3 * x) / 3)


@settings(max_examples=200, deadline=None)
@given(
    population=st.lists(SCORES, min_size=1, max_size=40),
    pairs=st.lists(st.tuples(SCORES, SCORES, st.floats(1, 50)), min_size=0, max_size=30),
    strata=st.integers(1, 3),
)
def test_every_figure_and_bound_stays_on_its_scale(population, pairs, strata):
    jury = np.array(population)
    clinician = [c for c, _, _ in pairs]
    sampled = [j for _, j, _ in pairs]
    weights = [w for _, _, w in pairs]
    cells = [str(i % strata) for i in range(len(pairs))]
    result = corrected_score(
        _population(jury, jury >= 3),
        _annotated(clinician, sampled, weights=weights, strata=np.array(cells, dtype=object)),
    )
    scales = {
        "jury_mean": (1, 5), "corrected_mean": (1, 5), "correction": (-4, 4),
        "jury_pass": (0, 1), "corrected_pass": (0, 1),
    }  # fmt: skip
    for name, (low, high) in scales.items():
        figure = getattr(result, name)
        if figure.value is None:
            assert figure.undefined
            continue
        assert low <= figure.value <= high
        if figure.low is not None:
            assert low <= figure.low <= figure.high <= high
            if figure.high - figure.low < 1e-9:
                assert figure.note  # a zero-width interval always says why
    if len(pairs) < MIN_ANNOTATED:
        assert result.corrected_mean.value is None and result.corrected_pass.value is None


def test_a_population_with_more_passed_than_conversations_is_refused_by_name():
    with pytest.raises(ValueError, match="400 of a population of 200"):
        Population(200, 600.0, 2000.0, 400)
