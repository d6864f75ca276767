"""Comparing two arms' coverage when constraints come in conversations.

The test is McNemar's adjusted for clustering (Durkalski et al. 2003): checked against
statsmodels' McNemar where the two coincide (one constraint per conversation), against the
published formula and a brute-force enumeration of sign patterns on small worked examples, and
by simulation: with constraints of one conversation moving together, the unadjusted test
rejects a true null far too often, the adjusted one near its nominal 5%. The conversation
bootstrap intervals of the recall difference keep near-nominal coverage where resampling
constraints does not. Per-axis coverage and pooled intervals."""

import itertools

import numpy as np
import pytest
from scipy.stats import chi2
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar

from rubric_lab.engine import coverage_stats


def pairs_of(both: int, only_a: int, only_b: int, neither: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both
        + [(True, False)] * only_a
        + [(False, True)] * only_b
        + [(False, False)] * neither
    )


def conversations_of(differences: list[int]) -> tuple[list[tuple[bool, bool]], list[int]]:
    """Paired constraints of one conversation per difference d: |d| constraints only A (d > 0)
    or only B (d < 0) entails, plus one entailed by both and one by neither."""
    pairs, clusters = [], []
    for conversation, difference in enumerate(differences):
        split = [(True, False) if difference > 0 else (False, True)] * abs(difference)
        members = [(True, True), (False, False), *split]
        pairs += members
        clusters += [conversation] * len(members)
    return pairs, clusters


TABLES = [(10, 7, 1, 12), (3, 0, 6, 2), (40, 19, 8, 30), (5, 30, 14, 9), (4, 0, 0, 6)]


@pytest.mark.parametrize(("both", "only_a", "only_b", "neither"), TABLES)
def test_with_one_constraint_per_conversation_it_is_statsmodels_mcnemar(
    both, only_a, only_b, neither
):
    exact = only_a + only_b < coverage_stats.EXACT_BELOW

    result = coverage_stats.mcnemar(pairs_of(both, only_a, only_b, neither))

    expected = statsmodels_mcnemar(
        [[both, only_a], [only_b, neither]], exact=exact, correction=False
    )
    assert result.exact is exact
    assert result.p_value == pytest.approx(expected.pvalue)
    if not exact:
        assert result.statistic == pytest.approx(expected.statistic)
    assert (result.both, result.only_a, result.only_b, result.neither) == (
        both, only_a, only_b, neither,
    )  # fmt: skip


def test_clustered_statistic_is_durkalskis_on_a_worked_example():
    # 25 conversations: ten where A alone entails two constraints, ten where B alone entails
    # one, five where A alone entails one. Sum of d = 20 - 10 + 5 = 15; sum of d^2 = 40 + 10
    # + 5 = 55; X^2 = 15^2 / 55 = 4.0909, p = 0.0431 (chi-square, 1 df).
    pairs, clusters = conversations_of([2] * 10 + [-1] * 10 + [1] * 5)

    result = coverage_stats.mcnemar(pairs, clusters)

    assert (result.only_a, result.only_b, result.clusters, result.exact) == (25, 10, 25, False)
    assert result.statistic == pytest.approx(225 / 55)
    assert result.p_value == pytest.approx(chi2.sf(225 / 55, 1)) and result.p_value > 0.04
    # Treating the 35 discordant constraints as independent finds more than is there.
    assert coverage_stats.mcnemar(pairs).p_value < 0.02


def test_with_few_differing_conversations_the_p_value_is_the_exact_sign_flip_one():
    differences = [3, -1, 2, 0, 1, 2, -2]
    pairs, clusters = conversations_of(differences)
    observed = abs(sum(differences))
    signs = list(itertools.product((1, -1), repeat=len(differences)))
    sums = [abs(int(np.dot(flip, differences))) for flip in signs]
    at_least = sum(total >= observed for total in sums)

    result = coverage_stats.mcnemar(pairs, clusters)

    assert result.exact and result.p_value == pytest.approx(at_least / len(signs))
    assert result.statistic == pytest.approx(observed**2 / sum(d * d for d in differences))


def simulated_arms(rng, conversations=30, constraints=10, spread=0.3):
    """Two arms equally good on average (the null holds), but within each conversation one
    arm tends to win the constraints they split: each conversation draws its own lean."""
    lean = rng.beta(spread, spread, conversations)
    split = rng.random((conversations, constraints)) < 0.4
    to_a = rng.random((conversations, constraints)) < lean[:, None]
    agreed = rng.random((conversations, constraints)) < 0.5
    a, b = np.where(split, to_a, agreed), np.where(split, ~to_a, agreed)
    clusters = np.repeat(np.arange(conversations), constraints)
    return list(zip(a.ravel(), b.ravel(), strict=True)), list(clusters)


def test_the_adjusted_test_holds_its_size_where_the_unadjusted_one_does_not():
    rng = np.random.default_rng(11)
    rejected = {"unadjusted": 0, "adjusted": 0}
    trials = 600
    for _ in range(trials):
        pairs, clusters = simulated_arms(rng)
        rejected["unadjusted"] += coverage_stats.mcnemar(pairs).p_value < 0.05
        rejected["adjusted"] += coverage_stats.mcnemar(pairs, clusters).p_value < 0.05
    assert rejected["unadjusted"] / trials > 0.15
    assert 0.02 <= rejected["adjusted"] / trials <= 0.08


def test_the_conversation_bootstrap_covers_the_true_difference_near_nominally():
    rng = np.random.default_rng(5)
    covered = {"constraints": 0, "conversations": 0}
    trials = 120
    for trial in range(trials):
        pairs, clusters = simulated_arms(rng)
        by_conversation = coverage_stats.compare_arms(pairs, clusters, seed=trial).difference
        by_constraint = coverage_stats.compare_arms(pairs, range(len(pairs)), seed=trial).difference
        covered["conversations"] += by_conversation.low <= 0 <= by_conversation.high
        covered["constraints"] += by_constraint.low <= 0 <= by_constraint.high
    assert covered["conversations"] / trials >= 0.88
    assert covered["constraints"] / trials <= 0.85


def test_the_comparison_gives_each_recall_and_the_difference_an_interval():
    pairs, clusters = conversations_of([2] * 10 + [-1] * 10 + [1] * 5)

    compared = coverage_stats.compare_arms(pairs, clusters, seed=3)

    test = compared.test
    assert compared.recall_a.value == pytest.approx(test.recall_a)
    assert compared.difference.value == pytest.approx(test.recall_a - test.recall_b)
    for estimate in (compared.recall_a, compared.recall_b, compared.difference):
        assert estimate.low <= estimate.value <= estimate.high
    assert compared == coverage_stats.compare_arms(pairs, clusters, seed=3)  # seeded
    assert coverage_stats.compare_arms([], []).difference is None


def test_pooled_intervals_resample_whole_cases():
    same = [coverage_stats.Coverage(4, 2, 5, 3)] * 6
    steady = coverage_stats.pooled_intervals(same)
    assert (steady.recall.low, steady.recall.high) == (0.5, 0.5)  # every resample alike
    assert steady.f1.value == pytest.approx(coverage_stats.f1(0.5, 0.6))

    mixed = [coverage_stats.Coverage(4, 4, 5, 5), coverage_stats.Coverage(4, 0, 5, 0)] * 5
    spread = coverage_stats.pooled_intervals(mixed, seed=1)
    assert spread.recall.low < 0.5 < spread.recall.high
    assert coverage_stats.pooled_intervals([coverage_stats.Coverage(0, 0, 3, 1)]).recall is None


def test_axis_coverage_counts_recall_and_precision_on_each_axis_with_intervals():
    entailed = [(1, "accuracy", True), (1, "accuracy", False), (2, "completeness", True),
                (2, "", False)]  # fmt: skip
    matched = [(1, "accuracy", True), (2, "completeness", False), (2, "completeness", True)]

    rows = {row.axis: row for row in coverage_stats.axis_coverage(entailed, matched)}

    assert list(rows) == ["accuracy", "completeness", ""]
    assert (rows["accuracy"].recall, rows["accuracy"].precision) == (0.5, 1.0)
    assert rows["completeness"].f1 == pytest.approx(coverage_stats.f1(1.0, 0.5))
    assert rows["completeness"].intervals.f1.value == rows["completeness"].f1
    assert rows[""].precision is None and rows[""].intervals.precision is None
    assert (rows[""].constraints, rows[""].entailed) == (1, 0)
