"""Figures of rubric_agreement on a case small enough to work by hand.

Four conversations, raters a and b, jury means:
  item 1: a 3, b 4 -> mean 3.5, jury 4.0  (diff +0.5, adjacent, both round to 4: exact)
  item 2: a 2, b 2 -> mean 2.0, jury 4.5  (diff +2.5, not adjacent, major)
  item 3: a 5, b 3 -> mean 4.0, jury 3.0  (diff -1.0, adjacent on the boundary, not exact)
  item 4: a 1, b 2 -> mean 1.5, jury 2.0  (diff +0.5, adjacent, both round to 2: exact)
"""

import pytest
from sklearn.metrics import cohen_kappa_score

from alignment.engine.agreement import EXACT_AGREEMENT_DEFINITION, rubric_agreement

from .conftest import clinicians, jury

RATINGS = [(1, "a", 3), (1, "b", 4), (2, "a", 2), (2, "b", 2),
           (3, "a", 5), (3, "b", 3), (4, "a", 1), (4, "b", 2)]  # fmt: skip
JURY = {1: 4.0, 2: 4.5, 3: 3.0, 4: 2.0}


@pytest.fixture
def result():
    return rubric_agreement(clinicians(RATINGS), jury(JURY), resamples=200, seed=1)


def test_adjacent_and_exact_agreement_count_conversations(result):
    assert result.jury_adjacent.value == pytest.approx(3 / 4)
    assert result.jury_exact.value == pytest.approx(2 / 4)
    assert (result.jury_adjacent.n_items, result.jury_adjacent.n_ratings) == (4, 8)


def test_chance_baselines_come_from_the_observed_marginals(result):
    # Jury {4, 4.5, 3, 2} x means {3.5, 2, 4, 1.5}: 9 of 16 pairs lie within one point.
    assert result.jury_adjacent_chance.value == pytest.approx(9 / 16)
    # Rounded jury 4, 5, 3, 2 (1/4 each) x rounded means 4, 2, 4, 2 (1/2 each).
    assert result.jury_exact_chance.value == pytest.approx(2 * (1 / 4 * 1 / 2))


def test_bias_is_jury_minus_clinician_mean(result):
    assert result.mean_signed_diff.value == pytest.approx((0.5 + 2.5 - 1 + 0.5) / 4)
    assert result.mean_abs_diff.value == pytest.approx((0.5 + 2.5 + 1 + 0.5) / 4)


def test_major_disagreements_and_confusion_matrix(result):
    assert result.major_disagreements == 1
    expected = [[0] * 5 for _ in range(5)]
    for clinician_level, jury_level in [(4, 4), (2, 5), (4, 3), (2, 2)]:
        expected[clinician_level - 1][jury_level - 1] += 1
    assert result.confusion == expected


def test_human_human_agreement_pools_rater_pairs(result):
    assert result.human_adjacent.value == pytest.approx(3 / 4)
    assert result.human_exact.value == pytest.approx(1 / 4)
    # Pooled scores 1:1, 2:3, 3:2, 4:1, 5:1 of 8.
    assert result.human_exact_chance.value == pytest.approx((1 + 9 + 4 + 1 + 1) / 64)
    assert result.human_adjacent_chance.value == pytest.approx((16 + 2 * (3 + 6 + 2 + 1)) / 64)


def test_a_conversation_with_three_raters_counts_three_pairs():
    ratings = [(1, "a", 1), (1, "b", 2), (1, "c", 4), (2, "a", 3), (2, "b", 3)]
    result = rubric_agreement(clinicians(ratings), None, resamples=0)
    # Pairs (1,2) (1,4) (2,4) on item 1 and (3,3) on item 2: 2 of 4 adjacent, 1 of 4 exact.
    assert result.human_adjacent.value == pytest.approx(2 / 4)
    assert result.human_exact.value == pytest.approx(1 / 4)
    assert (result.human_adjacent.n_items, result.human_adjacent.n_ratings) == (2, 5)


def test_kappa_pairs_match_scikit_learn_over_labels_one_to_five(result):
    [(rater_a, rater_b, kappa)] = result.kappa_pairs
    expected = cohen_kappa_score([3, 2, 5, 1], [4, 2, 3, 2], labels=[1, 2, 3, 4, 5],
                                 weights="quadratic")  # fmt: skip
    assert (rater_a, rater_b) == ("a", "b")
    assert kappa.value == pytest.approx(expected)
    assert (kappa.n_items, kappa.n_ratings) == (4, 8)


def test_exact_agreement_rounds_halves_up_as_the_definition_says():
    # Jury 2.5 and clinician mean 3.0 round to 3 and 3; jury 3.49 and mean 3.5 to 3 and 4.
    ratings = [(1, "a", 3), (1, "b", 3), (2, "a", 3), (2, "b", 4)]
    result = rubric_agreement(clinicians(ratings), jury({1: 2.5, 2: 3.49}), resamples=0)
    assert result.jury_exact.value == pytest.approx(1 / 2)
    assert "rounded half up" in EXACT_AGREEMENT_DEFINITION


def test_adjacent_agreement_tolerates_float_means_on_the_boundary():
    # Clinician mean 7/3 and jury mean 10/3 differ by exactly 1 (in floats, by a hair more).
    ratings = [(1, "a", 2), (1, "b", 2), (1, "c", 3)]
    result = rubric_agreement(clinicians(ratings), jury({1: (3 + 3 + 4) / 3}), resamples=0)
    assert result.jury_adjacent.value == 1.0


def test_without_a_jury_only_human_figures_are_given():
    result = rubric_agreement(clinicians(RATINGS), None, resamples=0)
    assert result.jury_adjacent.value is None
    assert result.jury_adjacent.undefined == "no jury scores for this rubric"
    assert result.alpha_with_jury.value is None
    assert result.human_adjacent.value == pytest.approx(3 / 4)
    assert result.n_items_without_jury == 4
