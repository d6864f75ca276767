"""Population-weighted figures: Hajek weights and the bootstrap within sampling cells.

Independent checks: with whole-number weights every weighted figure equals the sample figure of
the study written out with each conversation repeated as often as its weight (computed there by
krippendorff, scikit-learn and scipy); the weighted share equals samplics' estimate; a weighted
kappa equals scikit-learn's with sample weights."""

import warnings
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from alignment.engine import agreement
from alignment.engine.agreement import rubric_agreement
from alignment.engine.design import (
    intervals_disjoint,
    pooled_strata,
    strata_pooling,
    stratified_resample_weights,
)
from alignment.engine.frames import ITEM, RATER, SCORE, STRATUM, WEIGHT
from jury.engine.score_gaps import is_adjacent

from .conftest import synthetic

FIGURES = [f.name for f in fields(agreement.RubricAgreement) if f.type == "Estimate"]


def _study(n_items=60, seed=2):
    long, jury_long = synthetic(n_items=n_items, n_raters=4, per_item=3, seed=seed)
    return long.drop(columns="rubric"), jury_long.set_index(ITEM)["jury"]


def _design(items, weights, strata=None) -> pd.DataFrame:
    strata = ["cell"] * len(items) if strata is None else strata
    return pd.DataFrame({ITEM: items, WEIGHT: weights, STRATUM: strata})


def _repeated(clinicians: pd.DataFrame, jury: pd.Series, weights: dict):
    """Each conversation written out `weight` times as distinct conversations."""
    rows, means = [], {}
    for item, group in clinicians.groupby(ITEM):
        for copy in range(weights[item]):
            rows += [((item, copy), r, s) for r, s in zip(group[RATER], group[SCORE], strict=True)]
            means[(item, copy)] = jury[item]
    return pd.DataFrame(rows, columns=[ITEM, RATER, SCORE]), pd.Series(means)


def _values(result) -> dict:
    values = {name: getattr(result, name).value for name in FIGURES}
    return values | {f"kappa {a} {b}": k.value for a, b, k in result.kappa_pairs}


SCALED = ("alpha_clinicians", "alpha_with_jury", "icc")  # hold an n - 1 of their own


def test_whole_number_weights_equal_the_sample_with_each_conversation_repeated():
    clinicians, jury = _study()
    items = np.sort(clinicians[ITEM].unique())
    rng = np.random.default_rng(9)
    weights = {item: int(w) for item, w in zip(items, rng.integers(1, 4, len(items)), strict=True)}
    weighted = rubric_agreement(
        clinicians, jury, resamples=0, design=_design(items, [weights[i] for i in items])
    )
    repeated = rubric_agreement(*_repeated(clinicians, jury, weights), resamples=0)
    assert weighted.weighted and not repeated.weighted
    expected = _values(repeated)
    for name, value in _values(weighted).items():
        if name not in SCALED:
            assert value == pytest.approx(expected[name], abs=1e-10), name
    assert len(expected) == len(FIGURES) + 6  # 4 raters: six kappa pairs were compared
    # Alpha = 1 - (n - 1) D over n pairable values, and scaling every weight by s turns D into
    # D / s: the repeated study (krippendorff's package) has n over its copies, the weighted
    # one the weights scaled to average 1, s = conversations / copies.
    scale = len(items) / sum(weights.values())
    for name in ("alpha_clinicians", "alpha_with_jury"):
        pairable = _pairable_values(clinicians, jury, weights, with_jury=name == "alpha_with_jury")
        disagreement = (1 - expected[name]) / (pairable - 1)
        own = 1 - (pairable - 1 / scale) * disagreement
        assert getattr(weighted, name).value == pytest.approx(own, abs=1e-10), name


def _pairable_values(clinicians, jury, weights, *, with_jury: bool) -> float:
    """Values in units with two or more of them, each unit counted `weight` times."""
    total = 0
    for item, group in clinicians.groupby(ITEM):
        values = len(group) + (1 if with_jury and np.isfinite(jury[item]) else 0)
        total += weights[item] * values if values >= 2 else 0
    return total


def test_weighted_counts_stay_the_samples_conversations_and_ratings():
    clinicians, jury = _study()
    items = np.sort(clinicians[ITEM].unique())
    weighted = rubric_agreement(clinicians, jury, resamples=50, design=_design(items, 7.5))
    sample = rubric_agreement(clinicians, jury, resamples=50)
    for name in FIGURES:
        assert getattr(weighted, name).n_items == getattr(sample, name).n_items, name
        assert getattr(weighted, name).n_ratings == getattr(sample, name).n_ratings, name
    # One weight for all: every figure is the sample's (the weights are scaled to average 1,
    # so alpha's and the ICC's small-sample terms count the annotated conversations).
    for name in FIGURES:
        assert getattr(weighted, name).value == pytest.approx(getattr(sample, name).value), name


def test_the_weighted_share_is_hajeks_and_equals_samplics():
    from samplics.estimation import TaylorEstimator
    from samplics.utils.types import PopParam

    clinicians, jury = _study(n_items=80, seed=4)
    items = np.sort(clinicians[ITEM].unique())
    weights = np.random.default_rng(3).uniform(1, 30, len(items))
    strata = [f"bin {item % 4}" for item in items]
    figure = rubric_agreement(
        clinicians, jury, resamples=0, design=_design(items, weights, strata)
    ).jury_adjacent
    mean = clinicians.groupby(ITEM)[SCORE].mean().reindex(items).to_numpy()
    hits = is_adjacent(jury.reindex(items).to_numpy() - mean).astype(float)
    assert figure.value == pytest.approx((weights * hits).sum() / weights.sum(), abs=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        taylor = TaylorEstimator(PopParam.mean)
        taylor.estimate(y=hits, samp_weight=weights, stratum=np.array(strata))
    assert figure.value == pytest.approx(float(taylor.point_est), abs=1e-12)


def test_a_weighted_kappa_equals_scikit_learns_with_sample_weights():
    clinicians, jury = _study(n_items=50, seed=6)
    items = np.sort(clinicians[ITEM].unique())
    weights = np.random.default_rng(5).uniform(0.5, 9, len(items))
    result = rubric_agreement(clinicians, jury, resamples=0, design=_design(items, weights))
    wide = clinicians.pivot(index=ITEM, columns=RATER, values=SCORE).reindex(items)
    for rater_a, rater_b, kappa in result.kappa_pairs:
        shared = wide[[rater_a, rater_b]].notna().all(axis=1).to_numpy()
        expected = cohen_kappa_score(
            wide.loc[shared, rater_a].astype(int), wide.loc[shared, rater_b].astype(int),
            labels=[1, 2, 3, 4, 5], weights="quadratic", sample_weight=weights[shared],
        )  # fmt: skip
        assert kappa.value == pytest.approx(expected, abs=1e-12)


def test_the_bootstrap_resamples_within_cells():
    # Every conversation of cell A agrees with the jury and none of cell B does: within-cell
    # resamples keep each cell's share, so the weighted share cannot move at all.
    rows, means, strata = [], {}, []
    for item in range(40):
        in_a = item < 24
        rows += [(item, "r1", 3), (item, "r2", 3)]
        means[item] = 3.0 if in_a else 5.0
        strata.append("A" if in_a else "B")
    clinicians, jury = pd.DataFrame(rows, columns=[ITEM, RATER, SCORE]), pd.Series(means)
    weights = np.where(np.array(strata) == "A", 2.0, 10.0)
    design = _design(np.arange(40), weights, strata)
    weighted = rubric_agreement(clinicians, jury, resamples=300, design=design).jury_adjacent
    assert weighted.value == pytest.approx(48 / (48 + 160))
    assert weighted.low == pytest.approx(weighted.value) and weighted.high == pytest.approx(
        weighted.low
    )
    plain = rubric_agreement(clinicians, jury, resamples=300).jury_adjacent
    assert plain.high - plain.low > 0.1  # resampling across cells moves the share


def test_every_resample_keeps_each_cells_size():
    strata = np.array(["a"] * 5 + ["b"] * 3 + ["c"] * 12)
    counts = stratified_resample_weights(strata, 200, np.random.default_rng(0))
    for cell, size in (("a", 5), ("b", 3), ("c", 12)):
        assert (counts[:, strata == cell].sum(axis=1) == size).all()
    assert counts[:, strata == "b"].std() > 0  # but which conversations varies


def test_cells_of_one_conversation_are_pooled_for_the_bootstrap():
    codes = pooled_strata(["x", "y", "y", "z", "w", "w", "w"])
    assert codes[0] == codes[3]  # the lone x and z share a pool
    assert len(set(codes[[1, 2]])) == 1 and codes[1] != codes[0]
    lone = pooled_strata(["x", "y", "y", "w", "w", "w"])
    assert lone[0] == lone[1] == lone[2]  # a lone pool joins the smallest other cell
    assert len(set(pooled_strata(["only"]))) == 1


def test_a_design_without_a_weight_for_a_rated_conversation_is_refused():
    clinicians, jury = _study(n_items=10)
    with pytest.raises(ValueError, match="no positive weight"):
        rubric_agreement(clinicians, jury, design=_design(np.arange(9), 1.0))


def test_disjoint_intervals_are_what_the_report_flags():
    from alignment.engine.bootstrap import Estimate

    low = Estimate(0.6, 0.5, 0.7, 10, 20)
    high = Estimate(0.85, 0.75, 0.95, 10, 20)
    touching = Estimate(0.75, 0.7, 0.8, 10, 20)
    assert intervals_disjoint(low, high) and intervals_disjoint(high, low)
    assert not intervals_disjoint(low, touching)
    assert not intervals_disjoint(low, Estimate(0.9, None, None, 10, 20))


def test_judge_figures_weighted_by_whole_numbers_equal_the_repeated_judges():
    from alignment.engine.frames import JUDGE
    from alignment.engine.judges import judge_agreement

    rng = np.random.default_rng(8)
    items = np.arange(30)
    mean = pd.Series(rng.integers(1, 6, 30).astype(float), index=items)
    rows = [(i, j, int(np.clip(mean[i] + rng.integers(-2, 3), 1, 5)))
            for i in items for j in range(3)]  # fmt: skip
    judges = pd.DataFrame(rows, columns=[ITEM, JUDGE, SCORE])
    weights = {int(i): int(w) for i, w in zip(items, rng.integers(1, 4, 30), strict=True)}
    weighted = judge_agreement(
        judges, mean, resamples=0, design=_design(items, [weights[i] for i in items])
    )
    copies = [(i, c) for i in items for c in range(weights[int(i)])]
    by_item = {i: list(rows.itertuples(index=False)) for i, rows in judges.groupby(ITEM)}
    repeated_rows = [((i, c), j, s) for (i, c) in copies for _, j, s in by_item[i]]
    repeated = judge_agreement(
        pd.DataFrame(repeated_rows, columns=[ITEM, JUDGE, SCORE]),
        pd.Series({(i, c): mean[i] for i, c in copies}),
        resamples=0,
    )
    assert weighted.weighted
    for ours, theirs in zip(weighted.pairs, repeated.pairs, strict=True):
        for name in ("adjacent", "exact", "kappa", "both_wrong", "error_correlation"):
            assert getattr(ours, name).value == pytest.approx(getattr(theirs, name).value), name
    assert weighted.judges[0].adjacent.value == pytest.approx(repeated.judges[0].adjacent.value)
    assert weighted.n_items == 30 and weighted.judges[0].adjacent.n_items == 30


def test_the_pooling_names_each_stratum_of_one_conversation_and_says_why():
    pooling = strata_pooling(["a", "a", "b", "c", "d", "d"])
    assert pooling.lone == ("b", "c") and not pooling.joined
    assert pooling.codes[2] == pooling.codes[3] != pooling.codes[0]
    assert pooling.note == (
        "2 strata held one conversation each and were pooled into one (a stratum needs two "
        "conversations to resample within and show its spread): b; c"
    )
    single = strata_pooling(["a", "a", "b", "c", "c", "c"])
    assert single.joined == "a" and single.codes[2] == single.codes[0]
    assert single.note.startswith("stratum b held one conversation and was resampled with "
                                  "stratum a")  # fmt: skip
    assert strata_pooling(["a", "a", "b", "b"]).note == ""


def test_a_weighted_figure_carries_the_note_of_the_strata_its_interval_pooled():
    clinicians, jury = _study(n_items=12)
    items = np.sort(clinicians[ITEM].unique())
    strata = ["big"] * 10 + ["lone one", "lone two"]
    weighted = rubric_agreement(clinicians, jury, resamples=20, design=_design(items, 2, strata))
    assert weighted.pooled_strata == strata_pooling(strata).note
    assert "lone one; lone two" in weighted.pooled_strata
    whole = rubric_agreement(clinicians, jury, resamples=20, design=_design(items, 2))
    assert whole.pooled_strata == "" and rubric_agreement(clinicians, jury).pooled_strata == ""
