"""The calibration round report: bias against the jury and peers, major disagreements,
tendencies, practice kept apart, synthetic work left out unless included."""

import pytest
from django.urls import reverse

from annotation.engine.round_report import Score, round_report
from annotation.services.round_report import jury_means, study_round_report
from tests.annotation.conftest import annotators
from tests.annotation.staff_support import annotate, full_scores
from tests.support.text import squashed

JURY = {(1, "cs"): 3.0, (2, "cs"): 3.5}


def scores() -> list[Score]:
    return [
        Score("ann", "a1", 1, "cs", 5),
        Score("ann", "a2", 2, "cs", 4),
        Score("ann", "a2", 2, "realism", 5),
        Score("bob", "b1", 1, "cs", 3),
        Score("bob", "b2", 2, "cs", 4),
        Score("bob", "b2", 2, "realism", 3),
        Score("pia", "p1", 1, "cs", 1, practice=True),
    ]


def rows_by_name(report):
    return {row.annotator: row for row in report.annotators + report.practice}


def test_differences_are_annotator_minus_jury_and_minus_the_peers_mean():
    rows = rows_by_name(round_report(scores(), JURY))
    ann, bob = rows["ann"], rows["bob"]
    assert (ann.items, ann.scores) == (2, 3)
    assert ann.vs_jury == pytest.approx((2 + 0.5) / 2)  # realism has no jury score
    assert ann.vs_peers == pytest.approx((2 + 0 + 2) / 3)  # peers: bob only, never the trainee
    assert bob.vs_jury == pytest.approx((0 + 0.5) / 2)
    assert bob.vs_peers == pytest.approx((-2 + 0 - 2) / 3) and bob.peer_comparisons == 3


def test_major_disagreements_are_counted_and_listed_largest_first():
    report = round_report(scores(), JURY)
    rows = rows_by_name(report)
    assert (rows["ann"].major_disagreements, rows["bob"].major_disagreements) == (1, 0)
    assert [(d.annotator, d.assignment, d.difference) for d in report.disagreements] == [
        ("ann", "a1", 2.0),
        ("pia", "p1", -2.0),
    ]


def test_practice_annotators_are_reported_apart_and_compared_with_licensed_peers():
    report = round_report(scores(), JURY)
    assert [r.annotator for r in report.annotators] == ["ann", "bob"]
    (pia,) = report.practice
    assert pia.practice and pia.vs_jury == -2 and pia.vs_peers == pytest.approx(1 - 4)


def test_tendencies_use_the_documented_half_point_threshold():
    rows = rows_by_name(round_report(scores(), JURY))
    (ann_cs,) = rows["ann"].tendencies
    assert (ann_cs.rubric, ann_cs.scores, ann_cs.label) == ("cs", 2, "over-scores")
    assert rows["bob"].tendencies[0].label == "in line"  # +0.25
    assert rows["pia"].tendencies[0].label == "too few scores"
    under = round_report([Score("u", "x", 1, "cs", 2), Score("u", "y", 2, "cs", 3)], JURY)
    assert under.annotators[0].tendencies[0].label == "under-scores"  # -0.75


def test_synthetic_annotators_are_marked():
    report = round_report([Score("sim", "s", 1, "cs", 3, synthetic=True)], JURY)
    assert report.annotators[0].synthetic


# --- on a study --------------------------------------------------------------------------


@pytest.fixture
def scored_round(calibration, clinicians):
    """Two clinicians on the round's first item: one at least 2 away from the jury's safety
    mean, one at its bin; a simulated clinician scoring 1."""
    item = calibration.items.first()
    jury = jury_means(calibration)[(item.pk, "clinical_safety")]
    base = round(jury)
    high = 5 if jury <= 3 else 1  # at least 2 away, whatever the jury said
    a = annotate(item, clinicians[0],
                 scores=full_scores(calibration, "clinical", 3, clinical_safety=high))  # fmt: skip
    annotate(item, clinicians[1],
             scores=full_scores(calibration, "clinical", 3, clinical_safety=base))  # fmt: skip
    simulated = annotators("clinical", 1, prefix="sim")[0]
    annotate(item, simulated, synthetic=True,
             scores=full_scores(calibration, "clinical", 3, clinical_safety=1))  # fmt: skip
    return calibration, item, jury, high, a


@pytest.mark.django_db
def test_the_study_report_compares_with_the_jury_of_its_scoring_jobs(scored_round):
    study, item, jury, high, _ = scored_round
    data = study_round_report(study)
    rows = rows_by_name(data.report)
    safety = {t.rubric: t for t in rows["clinical-0"].tendencies}["clinical_safety"]
    assert safety.mean_difference == pytest.approx(high - jury)
    assert data.synthetic_left_out == 1 and "sim-0" not in rows
    assert data.positions[item.pk] == item.position + 1


@pytest.mark.django_db
def test_synthetic_work_counts_only_when_the_researcher_includes_it(scored_round):
    study, *_ = scored_round
    data = study_round_report(study, include_synthetic=True)
    rows = rows_by_name(data.report)
    assert rows["sim-0"].synthetic and data.synthetic_left_out == 0


@pytest.mark.django_db
def test_the_report_page_links_each_major_disagreement_to_the_annotation(
    researcher_client, scored_round
):
    study, item, jury, high, high_assignment = scored_round
    page = researcher_client.get(reverse("annotation:staff_round_report", args=[study.pk]))
    html = squashed(page)
    link = reverse("annotation:staff_assignment", args=[high_assignment.public_id])
    assert link in html and f"{high - jury:+.2f}" in html
    assert "annotator − reference" in html and "≥ +0.5" in html
    assert "1 synthetic (simulated clinician) annotation left out" in html
    included = researcher_client.get(page.request["PATH_INFO"], {"synthetic": "include"})
    assert ">synthetic</span>" in included.content.decode()
