"""The rubric lab's launch form forecasts each stage's calls, tokens and cost from an earlier
generation job (rubric_lab.services.forecasts), cache reads included."""

import pytest
from django.urls import reverse

from benchmark.models import ModelCall
from rubric_lab.services import forecasts, pipeline

pytestmark = pytest.mark.django_db

GENERATOR, JUDGE = "anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"


@pytest.fixture
def earlier_job(played_run):
    conversations = list(played_run.conversations.scorable()[:2])
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard",
        judge_model="offline/standard", run=played_run, name="Pilot rubrics",
    )  # fmt: skip
    for generation_id in job.generations.values_list("pk", flat=True):
        assert pipeline.generation_execute(generation_id)
    return job


def test_each_stage_is_forecast_from_the_earlier_jobs_calls(earlier_job, played_run):
    result = forecasts.generation_forecast(
        run=played_run, conversations=10, generator_model=GENERATOR, judge_model=JUDGE
    )

    assert f"generation job {earlier_job.pk} 'Pilot rubrics' on the same run" in result.source
    roles = {role.role: role for role in result.roles}
    assert list(roles) == [
        "stage: routing", "stage: evidence", "stage: facts", "stage: intent",
        "stage: synthesis", "stage: audit", "stage: scoring",
    ]  # fmt: skip
    calls = ModelCall.objects.filter(conversation__rubric_generations__job=earlier_job)
    for role, purpose in (
        ("stage: synthesis", "rubric_synthesis"),
        ("stage: scoring", "rubric_judge"),
    ):
        made = calls.filter(purpose=purpose)
        assert roles[role].figures["calls"].estimate == pytest.approx(10 * made.count() / 2)
        tokens = sum(made.values_list("input_tokens", flat=True))
        assert roles[role].figures["input_tokens"].estimate == pytest.approx(10 * tokens / 2)
    assert roles["stage: scoring"].model == JUDGE and roles["stage: audit"].model == GENERATOR
    assert result.cost is not None and result.cost.low is not None


def test_ablated_stages_and_a_missing_judge_have_no_role(earlier_job, played_run):
    result = forecasts.generation_forecast(
        run=played_run, conversations=3, generator_model=GENERATOR, skip_audit=True
    )

    names = [role.role for role in result.roles]
    assert "stage: audit" not in names and "stage: scoring" not in names


def test_with_no_earlier_job_of_the_method_it_asks_for_a_pilot(earlier_job, played_run):
    result = forecasts.generation_forecast(
        run=played_run, conversations=3, generator_model=GENERATOR, method="direct"
    )

    assert result.source == forecasts.NO_SOURCE
    assert result.unobserved == ["stage: direct"]


def test_the_launch_page_shows_the_forecast_panel(earlier_job, played_run, admin_client_):
    page = admin_client_.get(reverse("rubric_lab:pipeline_new")).content.decode()
    assert reverse("rubric_lab:pipeline_forecast") in page and 'id="forecast"' in page

    panel = admin_client_.get(
        reverse("rubric_lab:pipeline_forecast"),
        {"run": played_run.pk, "limit": 5, "generator_model": GENERATOR, "judge_model": JUDGE,
         "retriever": "bm25", "top_k": 4, "audit_rounds": 3},
    ).content.decode()  # fmt: skip

    assert "stage: synthesis" in panel and "Total cost: $" in panel
    assert f"generation job {earlier_job.pk}" in panel


def test_an_incomplete_form_asks_for_what_is_missing(admin_client_):
    panel = admin_client_.get(reverse("rubric_lab:pipeline_forecast"), {"limit": 5})
    assert "Complete the form (run, generator model" in panel.content.decode()


def test_a_stage_the_earlier_job_skipped_is_unobserved_not_free(played_run):
    conversations = list(played_run.conversations.scorable()[:2])
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard", run=played_run,
        skip_audit=True,
    )  # fmt: skip
    for generation_id in job.generations.values_list("pk", flat=True):
        assert pipeline.generation_execute(generation_id)

    result = forecasts.generation_forecast(
        run=played_run, conversations=4, generator_model=GENERATOR, judge_model=JUDGE
    )

    assert result.unobserved == ["stage: audit", "stage: scoring"]
    assert {role.role for role in result.roles if role.figures} >= {"stage: synthesis"}
