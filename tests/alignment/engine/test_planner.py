"""Precision planner: more conversations for a narrower target, none when already there."""

import pytest

from alignment.engine.planner import items_needed, wilson_width

HITS = [True] * 40 + [False] * 10


def test_a_narrower_target_needs_more_conversations():
    needed = [items_needed(HITS, target_width=width) for width in (0.25, 0.2, 0.15, 0.1, 0.05)]
    assert needed == sorted(needed)
    assert needed[0] < needed[-1]


def test_the_answer_brings_the_interval_under_the_target_and_no_sooner():
    extra = items_needed(HITS, target_width=0.1)
    assert wilson_width(0.8, len(HITS) + extra) <= 0.1 < wilson_width(0.8, len(HITS) + extra - 1)


def test_already_narrow_enough_needs_nothing_more():
    assert items_needed(HITS, target_width=0.5) == 0


def test_perfect_agreement_on_a_few_conversations_still_asks_for_more():
    assert items_needed([True] * 3, target_width=0.1) > 0


def test_no_data_or_an_unreachable_target_cannot_be_estimated():
    assert items_needed([], target_width=0.1) is None
    assert items_needed(HITS, target_width=1e-6) is None


def test_a_target_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="target_width"):
        items_needed(HITS, target_width=0)
