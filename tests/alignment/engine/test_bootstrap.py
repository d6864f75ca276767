"""Bootstrap intervals: seeded, containing the point, and computed on true resamples.

The vectorised resamples must equal the figure recomputed on the resampled table written out
(each drawn conversation repeated as often as it was drawn)."""

from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from alignment.engine import agreement, coefficients, design
from alignment.engine.agreement import agreement_table, rubric_agreement
from alignment.engine.bootstrap import (
    SAME_IN_EVERY_RESAMPLE,
    Estimate,
    estimate,
    one_blas_thread,
    resample_weights,
    with_point,
)

from .conftest import synthetic

FIGURES = [f.name for f in fields(agreement.RubricAgreement) if f.type == "Estimate"]


def _estimates(result):
    return {name: getattr(result, name) for name in FIGURES} | {
        f"kappa {a} {b}": kappa for a, b, kappa in result.kappa_pairs
    }


def test_every_figure_has_an_interval_on_a_healthy_study(study):
    assert len(FIGURES) == 15  # every Estimate field of RubricAgreement is checked below
    clinicians, jury = study
    result = agreement_table(clinicians, jury, resamples=300)["safety"]
    for name, figure in _estimates(result).items():
        assert figure.value is not None, name
        assert figure.low is not None and figure.high is not None, name
        assert figure.resamples == 300, name


def test_intervals_are_identical_for_a_seed_and_move_with_another(study):
    clinicians, jury = study
    first = agreement_table(clinicians, jury, resamples=200, seed=7)
    again = agreement_table(clinicians, jury, resamples=200, seed=7)
    other = agreement_table(clinicians, jury, resamples=200, seed=8)
    assert first == again
    assert first["safety"].jury_adjacent.low != other["safety"].jury_adjacent.low or (
        first["safety"].alpha_clinicians.low != other["safety"].alpha_clinicians.low
    )


def test_intervals_contain_the_point_estimate(study):
    clinicians, jury = study
    result = agreement_table(clinicians, jury, resamples=500, seed=3)["safety"]
    for name, figure in _estimates(result).items():
        assert figure.low <= figure.value <= figure.high, name


def _expanded(clinicians: pd.DataFrame, jury: pd.Series, draws: np.ndarray):
    """The resampled study written out: item i drawn k times becomes k distinct items."""
    items = np.sort(clinicians["item"].unique())
    picked = [(item, copy) for item, count in zip(items, draws, strict=True)
              for copy in range(int(count))]  # fmt: skip
    rows, means = [], {}
    for item, copy in picked:
        for _, row in clinicians[clinicians["item"] == item].iterrows():
            rows.append(((item, copy), row["rater"], row["score"]))
        means[(item, copy)] = jury[item]
    frame = pd.DataFrame(rows, columns=["item", "rater", "score"])
    return frame, pd.Series(means)


def test_a_resample_equals_the_figures_recomputed_on_the_resampled_table(monkeypatch):
    long, jury_long = synthetic(n_items=40, n_raters=3, per_item=2, seed=5)
    clinicians = long.drop(columns="rubric")
    jury = jury_long.set_index("item")["jury"]
    draws = np.random.default_rng(11).multinomial(40, np.full(40, 1 / 40)).astype(float)
    # Two identical resamples make the percentile interval collapse onto the resample's value.
    monkeypatch.setattr(design, "resample_weights", lambda n, b, rng: np.vstack([draws] * 2))
    resampled = rubric_agreement(clinicians, jury, resamples=2)
    written_out = rubric_agreement(*_expanded(clinicians, jury, draws), resamples=0)
    for name, figure in _estimates(resampled).items():
        expected = _estimates(written_out)[name].value
        assert figure.low == pytest.approx(expected), name


def test_spearman_on_weights_equals_scipy_on_the_repeated_sample():
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, 60).astype(float)
    y = np.round(x + rng.normal(0, 1, 60))
    weights = rng.integers(0, 3, (5, 60)).astype(float)
    got = coefficients.spearman_from_weights(weights, x, y)
    expected = [stats.spearmanr(np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int))).statistic
                for w in weights]  # fmt: skip
    assert got == pytest.approx(expected)


def test_kappa_from_moments_equals_scikit_learn_on_random_raters():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a = rng.integers(1, 6, 30)
        b = np.clip(a + rng.integers(-2, 3, 30), 1, 5)
        moments = coefficients.kappa_columns(a, b).sum(axis=0)
        expected = cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")
        assert coefficients.kappa_from_sums(moments)[0] == pytest.approx(expected)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_from_sums_equals_the_package_on_random_sparse_tables(level):
    rng = np.random.default_rng(5)
    values = np.arange(1, 6)
    for _ in range(10):
        table = rng.integers(1, 6, (5, 40)).astype(float)
        table[rng.random(table.shape) < 0.5] = np.nan
        counts = np.stack([(table == v).sum(axis=0) for v in values], axis=1)
        sums = coefficients.coincidence_columns(counts).sum(axis=0)
        ours = coefficients.alpha_from_sums(sums, level=level, values=values)[0]
        assert ours == pytest.approx(coefficients.library_alpha(table, level=level, values=values))


def test_no_resamples_gives_points_without_intervals(study):
    clinicians, jury = study
    result = agreement_table(clinicians, jury, resamples=0)["safety"]
    assert result.jury_adjacent.value is not None
    assert (result.jury_adjacent.low, result.jury_adjacent.high) == (None, None)
    assert isinstance(result.jury_adjacent, Estimate)


@settings(max_examples=200, deadline=None)
@given(
    hits=st.lists(st.booleans(), min_size=1, max_size=15),
    seed=st.integers(0, 2**16),
)
def test_a_share_and_its_interval_stay_in_zero_to_one_and_a_zero_width_says_why(hits, seed):
    # Any sample, one conversation included: the percentile interval of a share is a share.
    values = np.asarray(hits, dtype=float)
    counts = resample_weights(len(values), 200, np.random.default_rng(seed))
    shares = with_point(counts) @ values / with_point(counts).sum(axis=1)
    figure = estimate(shares, n_items=len(values), n_ratings=len(values), reason="")
    assert 0 <= figure.value <= 1 and 0 <= figure.low <= figure.high <= 1
    if figure.high == figure.low:
        expected = "one conversation" if len(values) == 1 else SAME_IN_EVERY_RESAMPLE
        assert figure.note == f"zero width: {expected}"
    else:
        assert figure.note == ""


def test_spearman_reads_only_the_weight_columns_it_is_given():
    rng = np.random.default_rng(5)
    x = rng.integers(1, 6, 40).astype(float)
    y = np.round(x + rng.normal(0, 1, 40))
    weights = rng.integers(0, 3, (6, 100)).astype(float)
    columns = np.sort(rng.choice(100, 40, replace=False))
    got = coefficients.spearman_from_weights(weights, x, y, columns=columns)
    assert got == pytest.approx(coefficients.spearman_from_weights(weights[:, columns], x, y))


def test_the_resample_sums_run_on_one_blas_thread_for_the_whole_process():
    """Set from one thread (a report in a threaded server), it holds in every thread after,
    never undone by another report finishing."""
    import threading

    from threadpoolctl import threadpool_info

    reporter = threading.Thread(target=one_blas_thread)
    reporter.start()
    reporter.join()
    one_blas_thread()
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)
