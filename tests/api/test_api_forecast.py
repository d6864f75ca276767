"""dry_run on the run and scoring-job create routes: the forecast, declared, and nothing made."""

import pytest

from api.schemas import ForecastOut, PilotOut
from audit.models import AuditEvent
from benchmark.models import Conversation, ModelCall, Run
from benchmark.services import forecasts
from jury.models import JudgeScore, ScoringJob
from tests.support.builders import enriched_set, played

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


def pilot_payload(benchmark_set, **overrides) -> dict:
    return {"name": "Big", "benchmark_set": benchmark_set.pk, "models": ["openai/gpt-4o-mini"],
            "dry_run": True, "pilot": 2, **overrides}  # fmt: skip


def test_a_run_dry_run_with_pilot_launches_one_offline_pilot_then_forecasts_from_it(
    admin_client_,
):
    benchmark_set = enriched_set(size=4)
    payload = pilot_payload(benchmark_set)

    def ask():
        return admin_client_.post(f"{API}/runs", payload, content_type="application/json")

    first = ask()
    assert first.status_code == 202, first.content
    pilot = Run.objects.get()
    body = PilotOut.model_validate(first.json())
    assert body.pilot_run == pilot.pk and body.conversations == pilot.conversations.count() == 2
    assert pilot.agents.get().model == forecasts.PILOT_AGENT_MODEL
    assert pilot.patient_model == forecasts.PILOT_PATIENT_MODEL
    assert f"GET /runs/{pilot.pk}" in body.detail

    again = ask()  # the pilot is still playing: no second one
    assert again.status_code == 202 and again.json()["pilot_run"] == pilot.pk
    assert Run.objects.count() == 1

    played(pilot)
    answered = ask()
    assert answered.status_code == 200, answered.content
    forecast = ForecastOut.model_validate(answered.json())
    assert f"run {pilot.pk} " in forecast.source and "of the same set" in forecast.source
    assert forecast.roles[0].calls.estimate > 0 and forecast.roles[0].cost_usd.estimate > 0
    assert Run.objects.count() == 1


def test_a_pilot_is_not_launched_when_the_set_has_a_finished_run(admin_client_, scored_run):
    run, _ = scored_run
    before = counts()
    payload = pilot_payload(run.benchmark_set)
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 200 and counts() == before
    assert f"run {run.pk} " in ForecastOut.model_validate(response.json()).source


@pytest.mark.parametrize(
    ("overrides", "refusal"),
    [({"dry_run": False}, "pilot goes with dry_run"), ({"pilot": 0}, "at least one conversation")],
)
def test_a_pilot_without_dry_run_or_of_no_conversation_is_refused(
    admin_client_, overrides, refusal
):
    payload = pilot_payload(enriched_set(size=2), **overrides)
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 400 and refusal in response.json()["detail"]
    assert not Run.objects.exists()


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
