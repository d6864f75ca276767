"""McNemar's test on paired constraints against statsmodels (when installed) and scipy's
binomial test on the same 2x2 table; per-axis coverage counts."""

import pytest
from scipy.stats import binomtest, chi2

from rubric_lab.engine import coverage


def pairs_of(both: int, only_a: int, only_b: int, neither: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both
        + [(True, False)] * only_a
        + [(False, True)] * only_b
        + [(False, False)] * neither
    )


TABLES = [(10, 7, 1, 12), (3, 0, 6, 2), (40, 19, 8, 30), (5, 30, 14, 9), (4, 0, 0, 6)]


@pytest.mark.parametrize(("both", "only_a", "only_b", "neither"), TABLES)
def test_mcnemar_equals_statsmodels_on_the_same_table(both, only_a, only_b, neither):
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    exact = only_a + only_b < coverage.EXACT_BELOW

    result = coverage.mcnemar(pairs_of(both, only_a, only_b, neither))

    expected = contingency.mcnemar(
        [[both, only_a], [only_b, neither]], exact=exact, correction=True
    )
    assert result.exact is exact
    assert result.statistic == pytest.approx(expected.statistic)
    assert result.p_value == pytest.approx(expected.pvalue)


@pytest.mark.parametrize(("both", "only_a", "only_b", "neither"), TABLES)
def test_mcnemar_equals_scipys_binomial_test_or_corrected_chi_square(both, only_a, only_b, neither):
    result = coverage.mcnemar(pairs_of(both, only_a, only_b, neither))

    discordant = only_a + only_b
    if discordant == 0:
        expected = 1.0
    elif discordant < 25:
        expected = binomtest(only_a, discordant, 0.5).pvalue
    else:
        expected = chi2.sf((abs(only_a - only_b) - 1) ** 2 / discordant, 1)
    assert result.p_value == pytest.approx(expected)
    assert (result.both, result.only_a, result.only_b, result.neither) == (
        both, only_a, only_b, neither,
    )  # fmt: skip
    assert result.recall_a == pytest.approx((both + only_a) / (both + only_a + only_b + neither))


def test_axis_coverage_counts_recall_by_expert_axis_and_precision_by_generated_axis():
    entailed = [("accuracy", True), ("accuracy", False), ("communication_quality", True), ("", 0)]
    matched = [("accuracy", True), ("safety", False), ("safety", True)]

    rows = {row.axis: row for row in coverage.axis_coverage(entailed, matched)}

    assert list(rows) == ["accuracy", "communication_quality", "safety", ""]
    assert (rows["accuracy"].recall, rows["accuracy"].precision) == (0.5, 1.0)
    assert rows["communication_quality"].precision is None  # no generated criterion there
    assert rows["safety"].recall is None and rows["safety"].precision == 0.5
    assert (rows[""].constraints, rows[""].entailed) == (1, 0)
