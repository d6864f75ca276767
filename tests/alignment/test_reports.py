"""The cached study report: computed once per study state, recomputed when the data move, and
honest about what cannot be computed."""

import pytest
from django.core.cache import cache
from django.utils import timezone

from accounts.models import Track
from alignment.services import reports
from alignment.services.reports import ReportFilters, planner_rows, study_report
from annotation.models import Assignment
from tests.alignment.conftest import near_jury
from tests.annotation.conftest import annotators, new_study
from tests.annotation.staff_support import annotate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def counted_calls(monkeypatch):
    calls = []
    real = reports.agreement_table

    def counting(*args, **kwargs):
        if kwargs.get("design_long") is None:  # one computation: sample, then weighted
            calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(reports, "agreement_table", counting)
    return calls


def test_a_second_call_on_the_same_state_is_not_recomputed(annotated_study, counted_calls):
    first = study_report(annotated_study, resamples=50)
    second = study_report(annotated_study, resamples=50)
    assert len(counted_calls) == 1
    assert second.sections[0].agreement == first.sections[0].agreement


def test_filters_and_new_work_each_get_their_own_computation(annotated_study, counted_calls):
    study_report(annotated_study, resamples=50)
    study_report(annotated_study, ReportFilters(track=Track.CLINICAL), resamples=50)
    assert len(counted_calls) == 2
    assignment = Assignment.objects.filter(item__study=annotated_study).first()
    Assignment.objects.filter(pk=assignment.pk).update(
        invalidated_at=timezone.now(), saved_at=timezone.now()
    )
    study_report(annotated_study, resamples=50)
    assert len(counted_calls) == 3


def test_the_report_has_a_section_per_judged_rubric_and_realism_apart(annotated_study):
    report = study_report(annotated_study, resamples=50)
    assert [s.rubric.kind for s in report.sections] == ["dimension"] * 6
    assert {r.rubric.rubric_id for r in report.realism} == {
        "profile_realism",
        "conversation_realism",
    }
    realism = report.realism[0]
    assert realism.summary["n"] == report.n_items * 4  # four annotators score realism
    assert realism.agreement.jury_adjacent.value is None  # nobody judges realism
    section = report.sections[0]
    assert section.agreement.n_items == report.n_items
    assert len(section.points) == report.n_items
    assert section.judges is not None and section.judge_models


def test_one_annotator_leaves_human_figures_undefined_with_a_reason(scored_job):
    study = new_study(scored_job, size=8)
    (only,) = annotators(Track.CLINICAL, 1)
    for item in study.items.all():
        annotate(item, only, scores=near_jury(scored_job, item, Track.CLINICAL, 0))
    section = study_report(study, resamples=50).section("clinical_safety")
    agreement = section.agreement
    assert agreement.jury_adjacent.value is not None
    assert agreement.human_adjacent.value is None and agreement.human_adjacent.undefined
    assert agreement.kappa_pairs == []


def test_identical_scores_leave_alpha_undefined_with_a_reason(scored_job):
    study = new_study(scored_job, size=8)
    people = annotators(Track.CLINICAL, 2)
    for item in study.items.all():
        for person in people:
            annotate(item, person, scores={"clinical_safety": 3, "triage_quality": 3})
    agreement = study_report(study, resamples=50).section("clinical_safety").agreement
    assert agreement.human_exact.value == 1.0
    assert agreement.alpha_clinicians.value is None
    assert "same" in agreement.alpha_clinicians.undefined


def test_a_rubric_nobody_rated_shows_no_figures_rather_than_failing(scored_job):
    study = new_study(scored_job, size=8)
    (only,) = annotators(Track.OPERATIONAL, 1)
    annotate(study.items.first(), only, scores={"task_completion": 4})
    report = study_report(study, resamples=50)
    empty = report.section("clinical_safety")
    assert empty.agreement.n_items == 0
    assert empty.agreement.jury_adjacent.value is None
    assert empty.points.empty
    assert planner_rows(report, 0.1)[1]["needed"] is None


def test_the_planner_asks_for_more_conversations_for_a_narrower_interval(annotated_study):
    report = study_report(annotated_study, resamples=50)
    wide = {row["rubric"].rubric_id: row["needed"] for row in planner_rows(report, 0.3)}
    narrow = {row["rubric"].rubric_id: row["needed"] for row in planner_rows(report, 0.05)}
    assert all(narrow[rubric] > wide[rubric] for rubric in wide)
