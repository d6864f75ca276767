import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from jury.engine.stats import (
    export_table,
    format_model_table,
    format_sd_table,
    inter_judge_agreement,
    mean_ci,
    model_sd_table,
    model_table,
    subgroup_sensitivity,
    wilson_interval,
)

VALUES = [4.1, 3.9, 4.6, 2.8, 3.3, 4.4, 5.0, 3.7]
CODES = {"clinical_safety": "CS", "task_completion": "TC"}


def test_mean_ci_matches_scipys_t_interval():
    result = mean_ci(VALUES)
    low, high = scipy_stats.t.interval(
        0.95, len(VALUES) - 1, loc=np.mean(VALUES), scale=scipy_stats.sem(VALUES)
    )
    assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))
    assert result.sd == pytest.approx(np.std(VALUES, ddof=1)) and result.n == 8


def test_mean_ci_is_cut_at_the_ends_of_the_score_scale():
    # t(2) * 0.58 / sqrt(3) = 1.43 above 4.67: the interval reached 6.1 on a 1-5 scale.
    result = mean_ci([5.0, 5.0, 4.0])
    assert result.high == 5.0 and 1.0 <= result.low < result.mean
    assert mean_ci([1.0, 1.0, 2.0]).low == 1.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(1, 5), min_size=1, max_size=12))
def test_mean_ci_stays_on_the_scale_for_any_scores(values):
    result = mean_ci(values)
    assert 1 <= result.mean <= 5
    if len(values) == 1:
        assert math.isnan(result.low) and math.isnan(result.high)
    else:
        assert 1 <= result.low <= result.mean + 1e-9 and result.mean - 1e-9 <= result.high <= 5


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_wilson_interval_stays_in_zero_to_one_with_a_width(counts):
    low, high = wilson_interval(*counts)
    assert 0 <= low < high <= 1


def test_the_wilson_interval_holds_its_proportion_exactly_at_none_and_all():
    # Floats put 0 of 7 a hair above 0 and 10 of 10 a hair below 1: the pass-rate figure's
    # error bar (rate - low) came out negative and the report page answered 500.
    n = np.arange(1, 200)
    for successes in (np.zeros_like(n), n):
        low, high = wilson_interval(successes, n)
        rate = successes / n
        assert (rate - low >= 0).all() and (high - rate >= 0).all()


def test_the_model_table_says_why_an_aggregate_interval_is_missing_or_of_zero_width():
    conversations = pd.DataFrame(
        {"model": ["same", "same", "same", "alone"], "aggregate": [4.5, 4.5, 4.5, 3.0]}
    )
    rubric_scores = pd.DataFrame(
        [{"model": m, "rubric": "clinical_safety", "score": a, "passed": a >= 3}
         for m, a in zip(conversations["model"], conversations["aggregate"], strict=True)]
    )  # fmt: skip
    text = format_model_table(model_table(rubric_scores, conversations), {"clinical_safety": "CS"})
    cells = dict(zip(text["Model"], text["Aggregate (95% CI)"], strict=True))
    # They read "4.50 [4.50, 4.50]" and "3.00 [nan, nan]".
    assert cells["same"] == "4.50 (zero width: every conversation has the same value)"
    assert cells["alone"] == "3.00 (no interval: one conversation)"


def test_the_model_table_says_when_an_aggregate_interval_was_cut_at_five():
    # 4.8, 5, 5, 4.6: the t interval's upper end is 5.27; it is cut at 5 and the cell says so.
    conversations = pd.DataFrame({"model": ["high"] * 4, "aggregate": [4.8, 5.0, 5.0, 4.6]})
    rubric_scores = conversations.assign(rubric="clinical_safety", score=5, passed=True)
    table = model_table(rubric_scores, conversations)
    assert table.loc["high", "aggregate_high"] == 5.0 and table.loc["high", "aggregate_cut"]
    (cell,) = format_model_table(table, {"clinical_safety": "CS"})["Aggregate (95% CI)"]
    assert cell == "4.85 [4.55, 5.00] (interval cut at the end of the 1-5 scale)"


def test_mean_ci_of_a_single_value_has_no_bounds():
    result = mean_ci([4.0])
    assert result.mean == 4.0 and math.isnan(result.low) and math.isnan(result.high)


@pytest.mark.parametrize(("successes", "n"), [(0, 10), (7, 10), (10, 10), (431, 1200), (1, 3)])
def test_wilson_interval_matches_scipy(successes, n):
    expected = scipy_stats.binomtest(successes, n).proportion_ci(method="wilson")
    low, high = wilson_interval(successes, n)
    assert (low, high) == (pytest.approx(expected.low), pytest.approx(expected.high))


def test_wilson_interval_matches_a_hand_computation():
    # p = 0.8, n = 20, z = 1.959964: centre = (0.8 + z²/40) / (1 + z²/20),
    # half = z / (1 + z²/20) * sqrt(0.8 * 0.2 / 20 + z² / 1600).
    z = 1.959964
    centre = (0.8 + z**2 / 40) / (1 + z**2 / 20)
    half = z / (1 + z**2 / 20) * math.sqrt(0.16 / 20 + z**2 / 1600)
    low, high = wilson_interval(16, 20)
    assert low == pytest.approx(centre - half, abs=1e-6)
    assert high == pytest.approx(centre + half, abs=1e-6)


def test_wilson_interval_works_on_arrays():
    low, high = wilson_interval(np.array([5, 9]), np.array([10, 10]))
    assert low.shape == (2,) and (low < high).all()


def frames():
    rng = np.random.default_rng(7)
    rows, conversations = [], []
    for model, centre in (("model-b", 3.0), ("model-a", 4.2)):
        for _ in range(40):
            aggregate = float(np.clip(rng.normal(centre, 0.5), 1, 5))
            conversations.append({"model": model, "aggregate": aggregate})
            for rubric in CODES:
                score = float(rng.integers(1, 6))
                rows.append({"model": model, "rubric": rubric, "score": score,
                             "passed": score >= 3})  # fmt: skip
    return pd.DataFrame(rows), pd.DataFrame(conversations)


def test_the_model_table_sorts_by_aggregate_and_reports_intervals():
    rubric_scores, conversations = frames()
    table = model_table(rubric_scores, conversations, rubric_order=list(CODES))
    assert table.index.tolist() == ["model-a", "model-b"]
    a_scores = conversations.loc[conversations["model"] == "model-a", "aggregate"]
    expected = mean_ci(a_scores.tolist())
    assert table.loc["model-a", "aggregate_low"] == pytest.approx(expected.low)
    assert table.loc["model-a", "n"] == 40
    cs = rubric_scores[
        (rubric_scores["model"] == "model-a") & (rubric_scores["rubric"] == "clinical_safety")
    ]
    assert table.loc["model-a", "clinical_safety_pass_rate"] == pytest.approx(cs["passed"].mean())
    low, _ = wilson_interval(cs["passed"].sum(), len(cs))
    assert table.loc["model-a", "clinical_safety_pass_low"] == pytest.approx(low)
    assert list(table.columns[5:9]) == [
        "clinical_safety_mean",
        "clinical_safety_pass_rate",
        "clinical_safety_pass_low",
        "clinical_safety_pass_high",
    ]


def test_the_sd_table_reports_mean_and_conversation_sd():
    rubric_scores, conversations = frames()
    table = model_sd_table(rubric_scores, conversations, rubric_order=list(CODES))
    b = conversations.loc[conversations["model"] == "model-b", "aggregate"]
    assert table.loc["model-b", "aggregate_sd"] == pytest.approx(b.std(ddof=1))
    text = format_sd_table(table, CODES)
    assert list(text.columns) == ["Model", "Aggregate", "CS", "TC"]
    assert text.loc[1, "Aggregate"] == f"{b.mean():.2f} ({b.std():.2f})"


def test_formatted_tables_export_to_csv_markdown_and_latex():
    rubric_scores, conversations = frames()
    text = format_model_table(model_table(rubric_scores, conversations), CODES)
    titled = {"caption": "Scores per model", "label": "models"}
    markdown = export_table(text, "markdown", **titled)
    assert markdown.splitlines()[0].startswith("| Model | Aggregate (95% CI) | CS mean |")
    assert markdown.splitlines()[1] == "|" + " --- |" * len(text.columns)
    latex = export_table(text, "latex", **titled)
    assert r"Aggregate (95\% CI)" in latex and latex.count(r"\\") == 3
    assert export_table(text, "csv", **titled).startswith("Model,Aggregate (95% CI),CS mean")
    with pytest.raises(ValueError, match="export format"):
        export_table(text, "xlsx", **titled)


def test_latex_and_markdown_escape_their_special_characters():
    table = pd.DataFrame({"Model": ["a_b & c|d"], "Share": ["50%"]})
    titled = {"caption": "Shares", "label": "shares"}
    assert r"a\_b \& c|d & 50\%" in export_table(table, "latex", **titled)
    assert r"a_b & c\|d" in export_table(table, "markdown", **titled)


def test_a_subgroup_whose_interval_lies_outside_the_band_is_flagged():
    base = [3.9, 4.0, 4.1] * 10
    conversations = pd.DataFrame(
        {
            "model": "m",
            "aggregate": base + [2.0, 2.1, 1.9] * 2 + [3.0, 4.5, 3.5, 4.8] * 3,
            "severity": ["moderate"] * 30 + ["severe"] * 6 + ["mild"] * 12,
        }
    )
    result = subgroup_sensitivity(conversations, attribute="severity").set_index("subgroup")
    overall = mean_ci(conversations["aggregate"].tolist())
    assert result.loc["severe", "band_low"] == pytest.approx(overall.low)
    assert result.loc["severe", "flagged"] and result.loc["severe", "direction"] == "below"
    assert not result.loc["mild", "flagged"] and result.loc["mild", "direction"] == ""


def test_a_subgroup_overlapping_the_band_or_too_small_for_an_interval_is_not_flagged():
    conversations = pd.DataFrame(
        {"model": "m", "aggregate": [4.0, 4.2, 3.8, 4.1, 1.0], "age_group": list("aaaab")}
    )
    result = subgroup_sensitivity(conversations, attribute="age_group").set_index("subgroup")
    assert not result["flagged"].any()
    assert math.isnan(result.loc["b", "ci_low"])


def test_inter_judge_agreement_counts_exact_adjacent_and_pass_agreement():
    pairs = {"c1": (4, 4), "c2": (4, 5), "c3": (2, 4), "c4": (3, None)}
    scores = pd.DataFrame(
        [
            {"conversation_id": c, "rubric": "clinical_safety", "judge": judge, "score": score}
            for c, pair in pairs.items()
            for judge, score in zip("ab", pair, strict=True)
        ]
    )
    agreement = inter_judge_agreement(scores).loc["clinical_safety"]
    assert agreement["n"] == 3
    assert agreement["exact_agreement"] == pytest.approx(1 / 3)
    assert agreement["adjacent_agreement"] == pytest.approx(2 / 3)
    assert agreement["pass_agreement"] == pytest.approx(2 / 3)
    assert agreement["mean_abs_diff"] == pytest.approx(1.0)


def test_agreement_with_three_judges_averages_every_pair():
    scores = pd.DataFrame(
        {"conversation_id": 1, "rubric": "triage_quality", "judge": list("abc"), "score": [1, 2, 4]}
    )
    agreement = inter_judge_agreement(scores).loc["triage_quality"]
    assert agreement["mean_abs_diff"] == pytest.approx((1 + 3 + 2) / 3)
