import math
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jury.engine.aggregate import (
    conversation_aggregates,
    incomplete_rubrics,
    judge_aggregate_frame,
    judge_aggregates,
    jury_aggregate,
    merge_judges,
    merge_jury_frame,
    weighted_aggregate,
)
from jury.engine.rubrics import default_weights, load_rubrics

WEIGHTS = default_weights(load_rubrics())
RUBRICS = list(WEIGHTS)

# The paper's per-model rubric means (TC, CS, WA, TQ, CH, CQ) and aggregate column.
PAPER_MEANS = {
    "Claude Opus 4.8": ([4.84, 4.18, 4.41, 3.70, 4.23, 4.40], 4.25),
    "Qwen3-Next-80B": ([4.17, 2.68, 2.98, 2.56, 3.57, 3.16], 3.10),
}


def by_rubric(values):
    return dict(zip(RUBRICS, values, strict=True))


@pytest.mark.parametrize("model", PAPER_MEANS)
def test_the_paper_rubric_means_reproduce_its_aggregate_column(model):
    means, paper_aggregate = PAPER_MEANS[model]
    # The published means are rounded to 2 decimals (error <= 0.005 each, so <= 0.005 for
    # their weighted mean) and the published aggregate is rounded too: 0.01 covers both.
    assert weighted_aggregate(by_rubric(means), WEIGHTS) == pytest.approx(paper_aggregate, abs=0.01)


def test_the_default_aggregate_is_the_weighted_mean_over_8_3():
    scores = by_rubric([5, 1, 4, 3, 2, 5])
    expected = (5 * 1.0 + 1 * 2.0 + 4 * 1.6 + 3 * 1.4 + 2 * 1.4 + 5 * 0.9) / 8.3
    assert weighted_aggregate(scores, WEIGHTS) == pytest.approx(expected)


def test_custom_weights_change_the_aggregate_and_zero_weight_drops_a_rubric():
    scores = {"clinical_safety": 1, "task_completion": 5}
    assert weighted_aggregate(scores, {"clinical_safety": 3, "task_completion": 1}) == 2.0
    assert weighted_aggregate(scores, {"clinical_safety": 0, "task_completion": 1}) == 5.0


def test_an_aggregate_with_a_missing_rubric_score_is_refused():
    with pytest.raises(ValueError, match="clinical_safety"):
        weighted_aggregate({"task_completion": 4}, {"task_completion": 1, "clinical_safety": 2})


def test_negative_weights_are_refused():
    with pytest.raises(ValueError, match="weight"):
        weighted_aggregate({"task_completion": 4}, {"task_completion": -1})


def test_the_jury_mean_and_spread_of_two_judges():
    result = merge_judges([4, 5])
    assert (result.mean, result.sd, result.n) == (4.5, 0.5, 2)


def test_a_rubric_passes_when_the_jury_mean_reaches_3():
    assert merge_judges([2, 4]).passed("mean")
    assert merge_judges([3, 3]).passed("mean")
    assert not merge_judges([2, 3]).passed("mean")


def test_majority_vote_needs_more_than_half_and_a_tie_fails():
    assert not merge_judges([2, 4]).passed("majority")
    assert merge_judges([2, 4, 3]).passed("majority")
    assert not merge_judges([2, 2, 5]).passed("majority")


def test_pass_agreement_is_true_only_when_every_judge_reaches_the_same_verdict():
    assert merge_judges([3, 5]).pass_agreement
    assert merge_judges([1, 2]).pass_agreement
    assert not merge_judges([2, 3]).pass_agreement


def test_an_unknown_pass_mode_is_refused():
    with pytest.raises(ValueError, match="pass mode"):
        merge_judges([3, 4]).passed("unanimous")


def test_the_jury_aggregate_averages_each_judges_aggregate():
    judges = {"a": by_rubric([5] * 6), "b": by_rubric([3] * 6)}
    assert judge_aggregates(judges, WEIGHTS) == pytest.approx({"a": 5.0, "b": 3.0})
    assert jury_aggregate(judges, WEIGHTS) == pytest.approx(4.0)


def test_incomplete_rubrics_are_those_lacking_a_valid_score_from_some_judge():
    scores = {
        "task_completion": {"a": 4, "b": 5},
        "clinical_safety": {"a": 4, "b": None},
        "triage_quality": {"a": 3},
        "workflow_accuracy": {"a": 3, "b": math.nan},
    }
    missing = incomplete_rubrics(scores, rubric_ids=RUBRICS, judges=["a", "b"])
    assert missing == [
        "clinical_safety",
        "workflow_accuracy",
        "triage_quality",
        "clinical_helpfulness",
        "conversational_quality",
    ]


def score_frame(n_conversations, judges=("a", "b"), seed=0):
    rng = np.random.default_rng(seed)
    index = pd.MultiIndex.from_product(
        [range(n_conversations), RUBRICS, judges], names=["conversation_id", "rubric", "judge"]
    )
    return pd.DataFrame({"score": rng.integers(1, 6, len(index)).astype(float)}, index=index)


def test_the_frame_merge_matches_the_scalar_merge():
    scores = score_frame(30).reset_index()
    merged = merge_jury_frame(scores).set_index(["conversation_id", "rubric"])
    for (conversation, rubric), group in scores.groupby(["conversation_id", "rubric"]):
        expected = merge_judges(group["score"].tolist())
        row = merged.loc[(conversation, rubric)]
        assert row["mean"] == expected.mean and row["sd"] == pytest.approx(expected.sd)
        assert row["passed"] == expected.passed_by_mean
        assert row["pass_agreement"] == expected.pass_agreement
        assert row["complete"]


def test_the_frame_majority_mode_uses_majority_votes():
    scores = pd.DataFrame(
        {"conversation_id": 1, "rubric": "clinical_safety", "judge": ["a", "b"], "score": [2, 4]}
    )
    assert merge_jury_frame(scores, pass_mode="mean")["passed"].item()
    assert not merge_jury_frame(scores, pass_mode="majority")["passed"].item()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(1, 5), min_size=12, max_size=12), min_size=1, max_size=5))
def test_frame_aggregates_equal_the_scalar_jury_aggregate(rows):
    records = [
        (conversation, rubric, judge, values[j * 6 + r])
        for conversation, values in enumerate(rows)
        for j, judge in enumerate("ab")
        for r, rubric in enumerate(RUBRICS)
    ]
    scores = pd.DataFrame(records, columns=["conversation_id", "rubric", "judge", "score"])
    aggregates = conversation_aggregates(merge_jury_frame(scores), WEIGHTS)
    for conversation, values in enumerate(rows):
        judges = {"a": by_rubric(values[:6]), "b": by_rubric(values[6:])}
        expected = jury_aggregate(judges, WEIGHTS)
        assert aggregates.loc[conversation, "aggregate"] == pytest.approx(expected)


def test_a_conversation_missing_a_judge_score_is_incomplete_and_has_no_aggregate():
    scores = score_frame(3).reset_index()
    scores.loc[
        (scores["conversation_id"] == 1) & (scores["rubric"] == "clinical_safety")
        & (scores["judge"] == "b"), "score"
    ] = np.nan  # fmt: skip
    scores = scores[~((scores["conversation_id"] == 2) & (scores["rubric"] == "triage_quality"))]
    merged = merge_jury_frame(scores)
    aggregates = conversation_aggregates(merged, WEIGHTS)
    assert aggregates["complete"].tolist() == [True, False, False]
    assert aggregates["aggregate"].isna().tolist() == [False, True, True]
    incomplete = merged[~merged["complete"]]
    assert incomplete[["conversation_id", "rubric"]].values.tolist() == [[1, "clinical_safety"]]


def test_per_judge_frame_aggregates_follow_each_judges_scores():
    scores = score_frame(4).reset_index()
    per_judge = judge_aggregate_frame(scores, WEIGHTS).set_index(["conversation_id", "judge"])
    first = scores[(scores["conversation_id"] == 0) & (scores["judge"] == "a")]
    expected = weighted_aggregate(dict(zip(first["rubric"], first["score"], strict=True)), WEIGHTS)
    assert per_judge.loc[(0, "a"), "aggregate"] == pytest.approx(expected)


def test_duplicate_judge_rows_are_refused():
    scores = score_frame(1).reset_index()
    with pytest.raises(ValueError, match="more than one row"):
        merge_jury_frame(pd.concat([scores, scores.head(1)]))


def test_a_paper_sized_run_aggregates_without_row_loops():
    scores = score_frame(12_000).reset_index()  # 144,000 rows
    started = time.perf_counter()
    aggregates = conversation_aggregates(merge_jury_frame(scores), WEIGHTS)
    elapsed = time.perf_counter() - started
    assert len(aggregates) == 12_000 and aggregates["complete"].all()
    # Typically ~0.1 s; the loose bound only catches a slide back into per-row Python.
    assert elapsed < 3
