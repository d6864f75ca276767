"""The lab's evaluation launch forms show a forecast panel, refreshed by htmx as they change."""

import pytest
from django.urls import reverse

from rubric_lab.models import SensitivityStudy
from tests.rubric_lab.test_coverage_and_refine import rubric_job
from tests.rubric_lab.test_study_forecasts import PAIRWISE

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("page", "panel"),
    [
        ("rubric_lab:sensitivity_list", "rubric_lab:sensitivity_forecast"),
        ("rubric_lab:coverage_list", "rubric_lab:coverage_forecast"),
        ("rubric_lab:refine_list", "rubric_lab:refine_forecast"),
        ("rubric_lab:ablation_list", "rubric_lab:ablation_forecast"),
    ],
)
def test_each_launch_form_asks_for_its_forecast(admin_client_, page, panel):
    html = admin_client_.get(reverse(page)).content.decode()
    assert f'hx-get="{reverse(panel)}"' in html and 'id="forecast"' in html


def test_the_sensitivity_panel_forecasts_each_stage_and_keeps_nothing(admin_client_, played_run):
    query = {**PAIRWISE, "run": played_run.pk, "max_cases": 3, "seed": 0}
    panel = admin_client_.get(reverse("rubric_lab:sensitivity_forecast"), query).content.decode()

    assert "stage: perturb" in panel and "stage: pairwise judging" in panel
    assert "No earlier sensitivity study to forecast from" in panel
    assert "near-miss pairs" in panel
    assert not SensitivityStudy.objects.exists()


def test_an_incomplete_form_asks_for_what_is_missing(admin_client_):
    panel = admin_client_.get(reverse("rubric_lab:refine_forecast"), {"max_cases": 3})
    assert "Complete the form (rubric generation job" in panel.content.decode()


def test_a_launch_refusal_is_shown_in_the_panel(admin_client_, played_run):
    job = rubric_job(played_run)
    panel = admin_client_.get(
        reverse("rubric_lab:coverage_forecast"),
        {"generation_job": job.pk, "judge_model": "offline/standard"},
    ).content.decode()
    assert "No forecast: No rubric of" in panel and "expert criteria" in panel


def test_the_rubric_page_forecasts_a_score(admin_client_, played_run):
    rubric = rubric_job(played_run).generations.get().rubric
    page = admin_client_.get(reverse("rubric_lab:rubric", args=[rubric.pk])).content.decode()
    url = reverse("rubric_lab:rubric_score_forecast", args=[rubric.pk])
    assert f'hx-get="{url}"' in page

    query = {"conversation": rubric.conversation.public_id, "judge_model": "offline/standard"}
    panel = admin_client_.get(url, query).content.decode()

    assert "stage: scoring" in panel and "the rubric&#x27;s criteria" in panel
