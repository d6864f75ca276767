"""dry_run on the run and scoring-job create routes: the forecast, declared, and nothing made."""

import pytest

from api.schemas import ForecastOut
from audit.models import AuditEvent
from benchmark.models import Conversation, ModelCall, Run
from jury.models import JudgeScore, ScoringJob

pytestmark = pytest.mark.django_db

API = "/api/v1"
TABLES = (Run, Conversation, ModelCall, ScoringJob, JudgeScore, AuditEvent)


def counts() -> list[int]:
    return [table.objects.count() for table in TABLES]


def test_a_run_dry_run_answers_the_declared_forecast_and_creates_nothing(admin_client_, scored_run):
    run, _ = scored_run
    before = counts()
    payload = {
        "name": "Bigger",
        "benchmark_set": run.benchmark_set_id,
        "models": ["offline/careful", "openai/gpt-4o-mini"],
        "repetitions": 4,
        "dry_run": True,
    }
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 200, response.content
    assert counts() == before
    body = ForecastOut.model_validate(response.json())
    assert [role.role for role in body.roles] == [
        "agent: offline/careful · baseline",
        "agent: openai/gpt-4o-mini · baseline",
        "patient",
        "roster",
    ]
    assert body.roles[0].units == run.benchmark_set.entries.count() * 4
    assert body.roles[1].cost_usd.estimate > 0
    assert "of the same set" in body.source


def test_a_run_dry_run_still_refuses_what_the_form_refuses(admin_client_, scored_run):
    run, _ = scored_run
    payload = {"name": "X", "benchmark_set": run.benchmark_set_id, "models": ["nobody/model"],
               "dry_run": True}  # fmt: skip
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 400 and "nobody" in response.json()["detail"]


def test_a_scoring_dry_run_forecasts_each_judge_seat_and_creates_nothing(
    researcher_client, scored_run
):
    run, job = scored_run
    before = counts()
    response = researcher_client.post(
        f"{API}/scoring-jobs", {"run": run.pk, "dry_run": True}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert counts() == before
    body = ForecastOut.model_validate(response.json())
    assert [role.role for role in body.roles] == ["judge 1", "judge 2"]
    assert body.roles[0].calls.estimate == pytest.approx(
        sum(job.scores.filter(judge_index=0).values_list("calls", flat=True)), rel=0.01
    )
    assert body.dry_run and f"scoring job {job.pk} of the same run" in body.source
