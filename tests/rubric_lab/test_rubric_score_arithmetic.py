"""Weighted and normalised instance-rubric scores, and the rules every criterion obeys."""

import pytest

from rubric_lab.engine.rubric import Criterion, RubricError, criteria_from_rows, score_rubric


def criterion(weight, text=None):
    return Criterion(text=text or f"criterion weighted {weight}", axis="safety", weight=weight)


CRITERIA = [criterion(10), criterion(5), criterion(-8), criterion(3)]


def test_the_weighted_sum_adds_the_weights_of_met_criteria():
    score = score_rubric(CRITERIA, [True, False, False, True])
    assert score.weighted_sum == 13
    assert score.positive_total == 18
    assert score.normalised == pytest.approx(13 / 18)


def test_meeting_a_penalised_criterion_lowers_the_score_below_zero_unclipped():
    score = score_rubric(CRITERIA, [False, False, True, False])
    assert score.weighted_sum == -8
    assert score.normalised == pytest.approx(-8 / 18)


def test_every_positive_criterion_met_and_no_penalty_normalises_to_one():
    assert score_rubric(CRITERIA, [True, True, False, True]).normalised == 1.0


def test_a_rubric_without_positive_weight_has_an_undefined_normalised_score():
    score = score_rubric([criterion(-4), criterion(-2)], [True, False])
    assert score.weighted_sum == -4
    assert score.positive_total == 0
    assert score.normalised is None


def test_one_decision_is_needed_per_criterion():
    with pytest.raises(RubricError, match="3 decisions for 4 criteria"):
        score_rubric(CRITERIA, [True, True, True])


@pytest.mark.parametrize("weight", [0, 11, -11, 2.5, True, "5"])
def test_weights_must_be_nonzero_integers_within_ten(weight):
    with pytest.raises(RubricError):
        Criterion(text="x", axis="safety", weight=weight)


def test_an_unknown_axis_is_refused():
    with pytest.raises(RubricError, match="axis"):
        Criterion(text="x", axis="style", weight=2)


FACTS = {"f1": ["rf-chest-pain"], "f2": ["wf-action-honesty", "rf-chest-pain"]}


def row(**fields):
    return {"text": "Tells the patient to call 911", "axis": "safety", "weight": 9,
            "fact_ids": ["f1"], "intent_basis": [], **fields}  # fmt: skip


def test_criteria_link_to_the_passages_of_the_facts_they_cite():
    [parsed] = criteria_from_rows([row(fact_ids=["f2", "f1"])], fact_passages=FACTS)
    assert parsed.passage_ids == ("wf-action-honesty", "rf-chest-pain")


@pytest.mark.parametrize(
    "rows, message",
    [
        ([row(fact_ids=["f9"])], "unknown fact"),
        ([row(fact_ids=[])], "cites no fact"),
        ([row(axis="communication", fact_ids=[])], "rests on nothing"),
        ([row(axis="communication", fact_ids=[], intent_basis=["mood"])], "intent_basis"),
        ([row(weight=-3)], "no criterion has a positive weight"),
        ([row(), row()], "same text"),
        ([], "no criteria"),
    ],
)
def test_unsupported_or_malformed_criteria_are_refused(rows, message):
    with pytest.raises(RubricError, match=message):
        criteria_from_rows(rows, fact_passages=FACTS)


def test_without_intent_no_criterion_may_rest_on_it():
    rows = [row(), row(text="Asks when it began", axis="communication", fact_ids=[],
                       intent_basis=["missing_context"])]  # fmt: skip
    assert len(criteria_from_rows(rows, fact_passages=FACTS)) == 2
    with pytest.raises(RubricError, match="no intent was inferred"):
        criteria_from_rows(rows, fact_passages=FACTS, with_intent=False)
