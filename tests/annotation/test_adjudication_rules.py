"""Which (item, rubric) pairs qualify for adjudication (annotation.engine.adjudication): the
clinicians 2 points or more apart, or, after the study, the jury 2 points or more from their
mean, with the one definition of "major" (jury.engine.score_gaps). Pure: no database."""

from annotation.engine.adjudication import CLINICIANS, JURY, adjudication_gaps


def test_clinicians_two_points_apart_qualify_one_point_apart_do_not():
    scores = {(1, "safety"): [2, 4], (2, "safety"): [3, 4], (3, "safety"): [5]}
    gaps = adjudication_gaps(scores, {}, after_study=False)
    assert [(g.item, g.reason, g.gap) for g in gaps] == [(1, CLINICIANS, 2.0)]


def test_the_jury_counts_only_after_the_study():
    scores = {(1, "safety"): [4, 4, 5]}
    jury = {(1, "safety"): 13 / 3 - 2}  # 2 points below the clinicians' mean, as floats fall
    assert adjudication_gaps(scores, jury, after_study=False) == []
    (gap,) = adjudication_gaps(scores, jury, after_study=True)
    assert gap.reason == JURY and abs(gap.gap - 2) < 1e-9  # major within the tolerance
    assert adjudication_gaps(scores, {(1, "safety"): 2.5}, after_study=True) == []


def test_a_pair_that_qualifies_both_ways_is_offered_once_largest_gap_first():
    scores = {(1, "safety"): [1, 5], (2, "triage"): [2, 4]}
    jury = {(1, "safety"): 5.0, (2, "triage"): 5.0}
    gaps = adjudication_gaps(scores, jury, after_study=True)
    assert [(g.item, g.reason) for g in gaps] == [(1, CLINICIANS), (2, CLINICIANS)]
