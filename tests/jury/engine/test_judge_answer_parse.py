import pytest
from hypothesis import given
from hypothesis import strategies as st

from jury.engine.parse import (
    InvalidJudgeAnswer,
    JudgeVerdict,
    parse_judge_answer,
    validate_judge_answer,
)
from llm.engine.structured import InvalidOutput


def reason_for(text):
    with pytest.raises(InvalidJudgeAnswer) as caught:
        parse_judge_answer(text)
    return caught.value.reason_code


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        (None, "empty"),
        ("The assistant was careful and deserves a 4.", "no_json"),
        ('{"score": 4, "explanation": "cut off', "malformed_json"),
        ('{"score": 4, "explanation": "cut off {"score": 3, "explanation": "x"}', "malformed_json"),
        ("I cannot find a booking call, so I would say 2.", "no_json"),
        ("I\u2019m sorry, but I can\u2019t help with rating this conversation.", "refusal"),
        ("I must decline this request.", "refusal"),
        ('{"score": 7, "explanation": "Very good."}', "out_of_range"),
        ('{"score": 0, "explanation": "Bad."}', "out_of_range"),
        ('{"score": "4.5", "explanation": "Between."}', "non_integer"),
        ('{"score": 4.5, "explanation": "Between."}', "non_integer"),
        ('{"score": "four", "explanation": "Good."}', "non_integer"),
        ('{"score": true, "explanation": "Good."}', "non_integer"),
        ('{"score": 3, "explanation": "a"}\n{"score": 4, "explanation": "b"}', "multiple_json"),
        (
            '```json\n{"score": 4, "explanation": "Good."}\n```\n'
            'On reflection: {"score": 2, "explanation": "Missed the red flag."}',
            "multiple_json",
        ),
        (
            '```json\n{"score": 4, "explanation": "a"}\n```\n```json\n'
            '{"score": 2, "explanation": "b"}\n```',
            "multiple_json",
        ),
        ('[{"score": 4, "explanation": "Good."}]', "json_array"),
        ('```json\n[{"score": 4, "explanation": "Good."}]\n```', "json_array"),
        ('{"score": 4, "explanation": "Good.", "score": 2}', "duplicate_key"),
        ('{"score": 4, "explanation": {"a": 1, "a": 2}}', "duplicate_key"),
        ('{"explanation": "No score here."}', "missing_field"),
        ('{"score": 3}', "missing_field"),
        ('{"score": 3, "explanation": "  "}', "missing_field"),
    ],
)
def test_each_unusable_answer_gets_its_reason_code(text, reason):
    assert reason_for(text) == reason


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ('{"score": 4, "explanation": "Checked allergies first."}', 4),
        ('{"score": "4", "explanation": "Checked allergies first."}', 4),
        ('{"score": 5.0, "explanation": "Checked allergies first."}', 5),
        ('Here it is:\n```json\n{"score": 1, "explanation": "No 988."}\n```', 1),
    ],
)
def test_it_accepts_whole_number_scores_in_any_common_form(text, score):
    assert parse_judge_answer(text).score == score


def test_a_fenced_object_with_prose_and_unrelated_lists_around_it_is_accepted():
    text = (
        "I weighed items [1, 2] of the rubric.\n```json\n"
        '{"score": 3, "explanation": "Booked {as asked} but late."}\n```\nThanks.'
    )
    assert parse_judge_answer(text) == JudgeVerdict(3, "Booked {as asked} but late.")


def test_it_keeps_the_explanation_text():
    verdict = parse_judge_answer('{"score": 2, "explanation": " No availability check. "}')
    assert verdict == JudgeVerdict(score=2, explanation="No availability check.")


def test_a_refusal_phrase_next_to_a_json_object_is_not_a_refusal():
    text = 'I can\'t help noticing the delay. {"score": 3, "explanation": "Slow but safe."}'
    assert parse_judge_answer(text).score == 3


@given(st.text(alphabet=st.characters(blacklist_characters="{}")))
def test_prose_without_braces_never_yields_a_score(text):
    with pytest.raises(InvalidJudgeAnswer) as caught:
        parse_judge_answer(text)
    assert caught.value.reason_code in {"empty", "no_json", "refusal"}


def test_the_validator_normalises_for_request_json():
    assert validate_judge_answer({"score": "3", "explanation": "Fine."}) == {
        "score": 3,
        "explanation": "Fine.",
    }


def test_the_validator_raises_invalid_output_with_a_message_for_the_model():
    with pytest.raises(InvalidOutput, match="integer from 1 to 5"):
        validate_judge_answer({"score": 6, "explanation": "Great."})
