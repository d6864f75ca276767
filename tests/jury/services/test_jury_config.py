"""Jury configurations: validated judge model strings, weights and pass rules."""

import pytest
from django.core.exceptions import ValidationError

from jury.services import juries

pytestmark = pytest.mark.django_db


def test_a_jury_gets_the_rubric_file_weights_by_default():
    jury = juries.jury_create(name="Pair", judges=["offline/standard", "openai/gpt-5.5"])
    assert jury.weights["clinical_safety"] == 2.0
    assert sum(jury.weights.values()) == pytest.approx(8.3)
    assert (jury.pass_threshold, jury.merge_mode) == (3, "mean")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpt-5.5", "Line 1: model string 'gpt-5.5' has no model name"),
        ("offline/standard\nacme/judge", "Line 2: unknown provider 'acme'"),
        ("offline/standard\noffline/standard", "only once"),
        ("  \n", "at least one judge"),
    ],
)
def test_bad_judge_lists_are_refused_naming_the_line(text, message):
    with pytest.raises(ValidationError, match=message):
        juries.judges_parse(text)


def test_weights_must_cover_every_judged_rubric_and_not_all_be_zero():
    weights = juries.jury_create(name="W", judges=["offline/standard"]).weights
    with pytest.raises(ValidationError, match="exactly these rubrics"):
        juries.weights_check({"clinical_safety": 1.0}, weights)
    with pytest.raises(ValidationError, match="positive weight"):
        juries.weights_check(dict.fromkeys(weights, 0.0), weights)
    with pytest.raises(ValidationError, match=">= 0"):
        juries.weights_check({**weights, "clinical_safety": -1.0}, weights)


def test_the_demo_jury_is_created_once():
    assert juries.jury_demo_ensure() == juries.jury_demo_ensure()
    assert juries.jury_demo_ensure().judges == ["offline/standard", "offline/strict"]
