"""Bad data never raises: each figure says what cannot be computed and why, and counts show
what entered. A malformed table (wrong scores, duplicates) is refused with a clear error."""

import numpy as np
import pandas as pd
import pytest

from alignment.engine.agreement import agreement_table, rubric_agreement

from .conftest import clinicians, jury


def test_one_annotator_leaves_human_figures_undefined_but_jury_figures_computed():
    result = rubric_agreement(clinicians([(1, "a", 3), (2, "a", 4), (3, "a", 2)]),
                              jury({1: 3.0, 2: 4.5, 3: 4.0}), resamples=50)  # fmt: skip
    for figure in (result.human_adjacent, result.alpha_clinicians, result.ac2):
        assert figure.value is None
        assert figure.undefined == "only one annotator rated this rubric"
    assert result.jury_adjacent.value == pytest.approx(2 / 3)
    assert result.kappa_pairs == []
    assert (result.n_items, result.n_ratings, result.n_raters) == (3, 3, 1)


def test_no_overlap_between_annotators_is_named():
    result = rubric_agreement(clinicians([(1, "a", 3), (2, "b", 4), (3, "c", 2)]), None,
                              resamples=50)  # fmt: skip
    assert result.human_exact.undefined == "no conversation was scored by two or more annotators"
    assert all(kappa.undefined == "these two annotators share no conversation"
               for _, _, kappa in result.kappa_pairs)  # fmt: skip
    assert len(result.kappa_pairs) == 3


def test_identical_scores_make_alpha_undefined_with_the_reason_while_ac2_stays_defined():
    ratings = [(item, rater, 4) for item in range(5) for rater in ("a", "b", "c")]
    result = rubric_agreement(clinicians(ratings), jury(dict.fromkeys(range(5), 4.0)),
                              resamples=50)  # fmt: skip
    assert result.alpha_clinicians.value is None
    assert "same score" in result.alpha_clinicians.undefined
    assert "alpha is 0/0" in result.alpha_clinicians.undefined
    assert result.alpha_with_jury.value is None
    assert result.ac2.value == pytest.approx(1.0)  # Gwet's AC2 is stable here by design
    assert "do not vary" in result.spearman.undefined
    assert "do not vary" in result.icc.undefined
    assert all("0/0" in kappa.undefined for _, _, kappa in result.kappa_pairs)


def test_an_item_with_one_rating_counts_for_the_jury_but_not_for_human_agreement():
    ratings = [(1, "a", 3), (1, "b", 4), (2, "a", 5)]
    result = rubric_agreement(clinicians(ratings), jury({1: 3.0, 2: 5.0}), resamples=50)
    assert (result.jury_adjacent.n_items, result.jury_adjacent.n_ratings) == (2, 3)
    assert (result.human_adjacent.n_items, result.human_adjacent.n_ratings) == (1, 2)
    assert (result.n_items, result.n_ratings) == (2, 3)


def test_missing_and_incomplete_jury_scores_are_counted_not_dropped():
    ratings = [(1, "a", 3), (1, "b", 4), (2, "a", 2), (2, "b", 2), (3, "a", 5), (3, "b", 5)]
    means = jury({1: 3.5, 2: np.nan, 9: 4.0})  # 2 incomplete, 3 missing, 9 never rated
    result = rubric_agreement(clinicians(ratings), means, resamples=50)
    assert result.jury_adjacent.n_items == 1
    assert result.n_items_without_jury == 2
    assert result.n_jury_items_unrated == 1
    assert result.human_adjacent.n_items == 3


def test_a_jury_with_no_complete_score_explains_itself():
    result = rubric_agreement(clinicians([(1, "a", 3), (1, "b", 3)]), jury({1: np.nan}),
                              resamples=20)  # fmt: skip
    assert result.jury_adjacent.undefined == (
        "the jury has no complete score on any rated conversation"
    )
    assert result.alpha_with_jury.value is None


def test_a_rubric_nobody_rated_comes_back_empty_and_explained():
    empty = clinicians([])
    result = rubric_agreement(empty, jury({1: 3.0}), resamples=20)
    assert result.jury_adjacent.undefined == "no clinician rated this rubric"
    assert (result.n_items, result.n_jury_items_unrated) == (0, 1)


def test_agreement_table_keeps_a_rubric_only_the_jury_scored():
    long = pd.DataFrame([(1, "safety", "a", 3), (1, "safety", "b", 4)],
                        columns=["item", "rubric", "rater", "score"])  # fmt: skip
    jury_long = pd.DataFrame([(1, "safety", 3.0), (1, "triage", 2.0)],
                             columns=["item", "rubric", "jury"])  # fmt: skip
    table = agreement_table(long, jury_long, resamples=20)
    assert list(table) == ["safety", "triage"]
    assert table["triage"].n_items == 0
    assert table["triage"].n_jury_items_unrated == 1


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(1, "a", 6)], "integers 1-5"),
        ([(1, "a", 2.5)], "integers 1-5"),
        ([(1, "a", 3), (1, "a", 4)], "twice"),
        ([(None, "a", 3)], "blank id"),
    ],
)
def test_a_malformed_ratings_table_is_refused_with_the_problem_named(rows, message):
    with pytest.raises(ValueError, match=message):
        rubric_agreement(clinicians(rows), None, resamples=0)


def test_a_jury_mean_outside_one_to_five_is_refused():
    with pytest.raises(ValueError, match="1-5"):
        rubric_agreement(clinicians([(1, "a", 3)]), jury({1: 7.0}), resamples=0)
