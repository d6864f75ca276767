"""The pages count "adjacent" and "major" as the engine does (jury.engine.score_gaps): a jury
mean of 7/3 against clinicians scoring 1, 1, 2 (mean 4/3) is adjacent for the precision
planner too, and a jury mean of 13/3 against 2, 2, 3 (mean 7/3) reaches a minimum difference
of 2 in the disagreement report, although floating point puts both a hair off."""

import pytest
from django.core.cache import cache

from alignment.engine.planner import items_needed
from alignment.services.disagreements import DisagreementQuery, disagreement_page
from alignment.services.reports import ReportFilters, planner_rows, study_report
from jury.models import RubricResult
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate, full_scores
from tests.jury.services.builders import scored_job, world, world_job  # noqa: F401

pytestmark = pytest.mark.django_db
RUBRIC = "clinical_safety"


@pytest.fixture
def study(scored_job):  # noqa: F811 - the imported fixture
    """Two items: jury 7/3 against clinicians 1, 1, 2; jury 13/3 against 2, 2, 3."""
    cache.clear()
    study = new_study(scored_job, size=8)
    people = annotators("clinical", 3)
    items = study.items.order_by("position")[:2]
    cases = zip(items, ((7, (1, 1, 2)), (13, (2, 2, 3))), strict=True)
    for item, (jury_thirds, scores) in cases:
        RubricResult.objects.filter(
            job=scored_job, conversation=item.conversation, rubric_id=RUBRIC
        ).update(mean=jury_thirds / 3)
        for person, score in zip(people, scores, strict=True):
            annotate(item, person, scores=full_scores(study, "clinical", 3, **{RUBRIC: score}))
    return study


def test_the_precision_planner_counts_adjacent_agreement_as_the_engine_does(study):
    report = study_report(study, resamples=50)
    hits = report.hits(RUBRIC)
    assert sorted(hits) == [False, True]  # 7/3 vs 4/3 adjacent; 13/3 vs 7/3 two points off
    assert report.section(RUBRIC).agreement.jury_adjacent.value == 0.5
    row = next(r for r in planner_rows(report, 0.15) if r["rubric"].rubric_id == RUBRIC)
    assert row["needed"] == items_needed([True, False], target_width=0.15)


def test_the_disagreement_report_reaches_a_minimum_difference_of_two_points(study):
    query = DisagreementQuery(rubric=RUBRIC, min_diff=2.0)
    page = disagreement_page(study, ReportFilters(), query)
    assert page.matching == 1 and page.rows[0]["major"]
    assert page.majors[RUBRIC] == 1
