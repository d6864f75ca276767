"""Which changes of a stale tab clash with what was saved since (annotation.engine.merge)."""

from annotation.engine.merge import clashing_fields

SCORE, FEEDBACK = ("score", "safety"), ("feedback", "safety")


def test_a_field_nobody_else_changed_does_not_clash():
    assert clashing_fields({SCORE: 4}, {SCORE: None}, {SCORE: None, FEEDBACK: "new"}) == []


def test_a_field_changed_by_both_tabs_to_different_values_clashes():
    assert clashing_fields({SCORE: 4}, {SCORE: None}, {SCORE: 2}) == [SCORE]


def test_both_tabs_choosing_the_same_value_do_not_clash():
    assert clashing_fields({SCORE: 4}, {SCORE: 3}, {SCORE: 4}) == []


def test_a_field_sent_without_what_it_started_from_clashes():
    assert clashing_fields({SCORE: 4, FEEDBACK: "x"}, {SCORE: None}, {}) == [FEEDBACK]


def test_lists_compare_by_value():
    links = ("links", "safety")
    assert clashing_fields({links: ["e2"]}, {links: ["e1"]}, {links: ["e1"]}) == []
    assert clashing_fields({links: ["e2"]}, {links: ["e1"]}, {links: ["e3"]}) == [links]
