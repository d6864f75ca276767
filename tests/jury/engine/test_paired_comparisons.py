import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from jury.engine import paired
from jury.engine.paired import (
    bootstrap_intervals,
    case_means,
    holm_adjust,
    paired_comparisons,
    signed_rank_pvalues,
    versus_best,
)
from jury.engine.stats import shown_mean

# Two agents on 16 cases; rubric-like scores, so there are ties and zero differences.
A = [4.5, 4.0, 3.5, 5.0, 4.0, 3.0, 4.5, 4.0, 2.5, 4.0, 3.5, 5.0, 4.5, 3.0, 4.0, 4.5]
B = [4.0, 4.0, 3.0, 4.5, 3.0, 3.0, 4.5, 3.5, 3.0, 3.0, 3.5, 4.0, 4.0, 3.5, 3.0, 4.5]


def frame(scores: dict[str, list[float]], *, measure: str = "aggregate") -> pd.DataFrame:
    """Conversations of each model, one per case (case i = i-th score; NaN = not complete)."""
    rows = [
        {"model": model, "case": case, measure: value}
        for model, values in scores.items()
        for case, value in enumerate(values)
        if not math.isnan(value)
    ]
    return pd.DataFrame(rows)


def compare(scores: dict[str, list[float]], **options) -> pd.DataFrame:
    return paired_comparisons(
        case_means(frame(scores), ["aggregate"]),
        models=list(scores),
        measures=["aggregate"],
        **options,
    )


def test_repetitions_are_averaged_per_case_before_pairing():
    conversations = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "b"],
            "case": [1, 1, 2, 1, 2],
            "aggregate": [3.0, 5.0, 2.0, 3.5, 2.5],
        }
    )
    means = case_means(conversations, ["aggregate"])
    assert means.loc[("a", 1), "aggregate"] == 4.0
    row = paired_comparisons(means, models=["a", "b"], measures=["aggregate"]).iloc[0]
    # Per case: 4.0 - 3.5 and 2.0 - 2.5; a mean over conversations would weigh case 1 twice.
    assert row["n"] == 2 and row["mean_difference"] == pytest.approx(0.0)
    assert (row["wins"], row["ties"], row["losses"]) == (1, 0, 1)


def test_only_cases_both_agents_completed_are_paired():
    row = compare({"a": [4.0, 3.0, 5.0, 2.0], "b": [3.0, math.nan, 4.0, 1.0]}).iloc[0]
    assert row["n"] == 3 and row["mean_difference"] == pytest.approx(1.0)


def test_the_signed_rank_p_matches_scipy_with_pratts_treatment_of_zero_differences():
    differences = np.subtract(A, B)
    assert (differences == 0).sum() == 5  # ties that the zero method must handle
    expected = scipy_stats.wilcoxon(A, B, zero_method="pratt").pvalue
    dropped = scipy_stats.wilcoxon(A, B, zero_method="wilcox").pvalue
    row = compare({"a": A, "b": B}).iloc[0]
    assert row["p"] == pytest.approx(expected, rel=1e-12)
    assert row["p"] != pytest.approx(dropped)  # the choice of zero method is visible


def test_a_small_sample_with_zero_differences_matches_scipys_exact_permutation_p():
    a, b = A[:9], B[:9]
    expected = scipy_stats.wilcoxon(a, b, zero_method="pratt").pvalue
    assert compare({"a": a, "b": b}).iloc[0]["p"] == pytest.approx(expected, rel=1e-12)


def test_the_bootstrap_interval_is_scipys_percentile_interval_for_the_same_seed():
    differences = np.random.default_rng(3).normal(0.2, 0.8, size=57)
    low, high = bootstrap_intervals(differences[:, None], resamples=2000, seed=11)
    expected = scipy_stats.bootstrap(
        (differences,),
        np.mean,
        method="percentile",
        n_resamples=2000,
        rng=np.random.default_rng(11),
    ).confidence_interval
    assert low[0] == pytest.approx(expected.low, rel=1e-12)
    assert high[0] == pytest.approx(expected.high, rel=1e-12)


def test_the_bootstrap_is_reproducible_and_does_not_depend_on_batching(monkeypatch):
    differences = np.random.default_rng(4).normal(size=(40, 3))
    differences[[2, 7], 1] = np.nan
    first = bootstrap_intervals(differences, seed=5)
    assert np.array_equal(first, bootstrap_intervals(differences, seed=5))
    assert not np.array_equal(first, bootstrap_intervals(differences, seed=6))
    monkeypatch.setattr(paired, "BATCH_CELLS", 40 * 7)  # seven resamples per batch
    assert np.allclose(first, bootstrap_intervals(differences, seed=5), rtol=1e-12)


def test_a_pairs_interval_covers_its_mean_difference():
    row = compare({"a": A, "b": B}).iloc[0]
    assert row["ci_low"] < row["mean_difference"] < row["ci_high"]
    assert row["mean_difference"] == pytest.approx(np.mean(np.subtract(A, B)))


def test_holm_adjustment_matches_a_hand_worked_example():
    # Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> raised to
    # 0.06 so the adjusted values never decrease with the raw ones.
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_holm_leaves_untested_pairs_out_of_the_family():
    adjusted = holm_adjust([0.02, math.nan, 0.04])
    assert adjusted[[0, 2]] == pytest.approx([0.04, 0.04]) and math.isnan(adjusted[1])
    assert holm_adjust([]).shape == (0,)


def test_pvalues_are_holm_adjusted_across_the_pairs_of_each_score():
    rng = np.random.default_rng(8)
    base = rng.normal(3.5, 0.6, size=30)
    conversations = pd.DataFrame(
        [
            {"model": m, "case": case, "aggregate": base[case] + shift + rng.normal(0, 0.3),
             "clinical_safety": float(rng.integers(1, 6))}
            for m, shift in (("a", 0.4), ("b", 0.3), ("c", 0.0))
            for case in range(30)
        ]
    )  # fmt: skip
    measures = ["aggregate", "clinical_safety"]
    result = paired_comparisons(
        case_means(conversations, measures), models=["a", "b", "c"], measures=measures
    )
    assert result[["measure", "model_a", "model_b"]].values.tolist() == [
        [measure, first, second]
        for measure in measures
        for first, second in (("a", "b"), ("a", "c"), ("b", "c"))
    ]
    for _, family in result.groupby("measure"):
        assert family["p_holm"].to_numpy() == pytest.approx(holm_adjust(family["p"]))


def test_wins_ties_and_losses_treat_float_rounding_as_a_tie():
    row = compare({"a": [0.1 + 0.2, 4.0, 2.0], "b": [0.3, 3.0, 2.5]}).iloc[0]
    assert (row["wins"], row["ties"], row["losses"]) == (1, 1, 1)


@pytest.mark.parametrize(
    ("a", "b", "note"),
    [
        ([4.0, math.nan], [math.nan, 3.0], "no case completed by both"),
        ([4.0, 3.0], [3.0, math.nan], "one shared case: no interval or test"),
    ],
)
def test_too_few_shared_cases_give_no_interval_or_test_and_say_so(a, b, note):
    row = compare({"a": a, "b": b}).iloc[0]
    assert row["note"] == note
    assert all(math.isnan(row[key]) for key in ("ci_low", "ci_high", "p", "p_holm"))


def test_fewer_than_six_shared_cases_are_tested_with_a_warning_that_they_cannot_reject():
    row = compare({"a": [5.0, 4.0, 4.5, 5.0, 3.5], "b": [1.0, 1.5, 2.0, 1.0, 2.0]}).iloc[0]
    assert row["p"] == pytest.approx(0.0625) and "fewer than 6 shared cases" in row["note"]


def test_agents_identical_on_every_case_get_p_one():
    row = compare({"a": [4.0, 3.5, 2.0], "b": [4.0, 3.5, 2.0]}).iloc[0]
    assert row["p"] == 1.0 and row["note"] == "identical on every case"
    assert (row["ci_low"], row["ci_high"]) == (0.0, 0.0)
    assert signed_rank_pvalues(np.zeros((4, 1)))[0] == 1.0


def test_the_same_difference_on_every_case_says_why_its_interval_has_zero_width():
    a = [5.0, 4.5, 3.0, 4.0, 5.0, 4.0]
    row = compare({"a": a, "b": [score - 1 for score in a]}).iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (1.0, 1.0)
    assert row["note"] == "the same difference on every case: an interval of zero width"


def test_models_indistinguishable_from_the_best_are_marked():
    rng = np.random.default_rng(2)
    base = rng.normal(3.5, 0.5, size=40)
    scores = {
        "best": list(base + 0.5 + rng.normal(0, 0.2, 40)),
        "close": list(base + 0.48 + rng.normal(0, 0.2, 40)),
        "weak": list(base + rng.normal(0, 0.2, 40)),
        "lonely": [math.nan] * 39 + [3.0],
    }
    marks = versus_best(compare(scores, intervals=False), list(scores))
    assert marks == {
        "best": "best",
        "close": "indistinguishable",
        "weak": "different",
        "lonely": "untested",
    }


def test_models_whose_aggregate_prints_alike_are_all_best():
    """Two agents with the same scores show the same "2.66 [2.25, 3.06]": one standing."""
    scores = {"twin": A, "copy": list(A), "other": [value - 1 for value in A]}
    shown = {model: shown_mean(float(np.mean(values))) for model, values in scores.items()}
    marks = versus_best(compare(scores, intervals=False), list(scores), shown=shown)
    assert marks == {"twin": "best", "copy": "best", "other": "different"}
    assert versus_best(compare(scores, intervals=False), ["copy", "twin", "other"],
                       shown=shown) == marks  # whichever of the two sorts first  # fmt: skip


def test_without_intervals_the_bootstrap_is_skipped():
    result = compare({"a": A, "b": B}, intervals=False)
    assert result["ci_low"].isna().all() and not result["p"].isna().any()


def test_models_must_be_distinct():
    means = case_means(frame({"a": A}), ["aggregate"])
    with pytest.raises(ValueError, match="distinct"):
        paired_comparisons(means, models=["a", "a"], measures=["aggregate"])


def test_a_single_agent_has_nothing_to_compare_and_is_the_best():
    result = compare({"a": A})
    assert result.empty and list(result.columns) == paired.COLUMNS
    assert versus_best(result, ["a"]) == {"a": "best"}
