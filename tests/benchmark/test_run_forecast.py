"""A run's forecast from an earlier run (benchmark.services.forecasts)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from audit.models import AuditEvent
from benchmark.models import Conversation, ModelCall, Run
from benchmark.services import forecasts, runs
from benchmark.services.conversations import conversation_execute
from benchmark.services.runs import AgentChoice
from tests.benchmark.conftest import enrich_all, make_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def played_run(run):
    for conversation in run.conversations.all():
        conversation_execute(conversation.pk)
    runs.run_dispatch(run, lambda ids: None)
    run.refresh_from_db()
    return run


def test_with_no_finished_run_it_asks_for_a_pilot(ready_set, baseline):
    result = forecasts.run_forecast(
        benchmark_set=ready_set,
        agents=[AgentChoice("offline/careful", baseline)],
        patient_model="offline/patient",
    )
    assert result.source == forecasts.NO_SOURCE
    assert result.unobserved == ["agent: offline/careful · baseline", "patient", "roster"]


def test_the_same_run_again_forecasts_what_it_called(played_run, baseline):
    # Scaled 1:1, the estimate of every role is what the earlier run actually used.
    agents = [AgentChoice(m, baseline) for m in ("offline/careful", "offline/careless")]
    result = forecasts.run_forecast(
        benchmark_set=played_run.benchmark_set, agents=agents, patient_model="offline/patient"
    )
    assert "of the same set" in result.source
    calls = ModelCall.objects.filter(run=played_run)
    by_role = {role.role: role for role in result.roles}
    assert by_role["patient"].figures["calls"].estimate == pytest.approx(
        calls.filter(purpose="patient").count()
    )
    careful = by_role["agent: offline/careful · baseline"]
    assert careful.figures["calls"].estimate == pytest.approx(
        calls.filter(purpose="assistant", conversation__run_agent__model="offline/careful").count()
    )
    assert careful.basis.endswith("the same agent")
    assert result.calls == pytest.approx(calls.count())


def test_repetitions_and_new_models_scale_and_price_the_roles(played_run, baseline):
    result = forecasts.run_forecast(
        benchmark_set=played_run.benchmark_set,
        agents=[AgentChoice("openai/gpt-4o-mini", baseline)],
        patient_model="openai-compatible/no-price-here",
        repetitions=4,
    )
    agent, patient, roster = result.roles
    cases = played_run.benchmark_set.entries.count()
    assert agent.units == patient.units == cases * 4
    assert "this one is new" in agent.basis
    assert agent.cost is not None and agent.cost.estimate > 0
    assert patient.cost is None and roster.cost is None
    assert result.unpriced == ["openai-compatible/no-price-here"]


def test_another_sets_run_is_used_and_said_so(played_run, baseline, distribution):

    other = enrich_all(make_set(distribution, name="Other", seed=9))
    result = forecasts.run_forecast(
        benchmark_set=other,
        agents=[AgentChoice("offline/careful", baseline)],
        patient_model="offline/patient",
    )
    assert "no finished run of this set yet" in result.source


def test_enrichment_is_forecast_per_case(ready_set):
    demand = forecasts.enrichment_demand(ready_set, cases=300, model="openai/gpt-4o-mini")
    per_case = ready_set.model_calls.filter(purpose="enrichment").count() / ready_set.size
    assert demand.units == round(per_case * 300)
    assert len(demand.observed) == ready_set.model_calls.filter(purpose="enrichment").count()


# --- the launch page's panel and the command's --dry-run ------------------------------------


def forecast_query(benchmark_set, config, **overrides) -> dict:
    return {
        "benchmark_set": benchmark_set.pk,
        "models": "offline/careful\nopenai-compatible/no-price-here",
        "agent_configs": [config.pk],
        "patient_model": "offline/patient",
        "roster_model": "offline/patient",
        "repetitions": 2,
        **overrides,
    }


def test_the_launch_page_asks_for_the_panel_on_change(admin_client_):
    page = admin_client_.get(reverse("benchmark:run_new")).content.decode()
    assert f'hx-get="{reverse("benchmark:run_forecast")}"' in page
    assert 'id="forecast"' in page


def test_the_panel_shows_each_role_the_total_and_the_unpriced_model(
    admin_client_, played_run, baseline
):
    query = forecast_query(played_run.benchmark_set, baseline)
    response = admin_client_.get(reverse("benchmark:run_forecast"), query, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert response.status_code == 200
    for text in ("agent: offline/careful · baseline", "patient", "roster", "Total cost"):
        assert text in page
    assert "unknown: no price" in page and "No price for openai-compatible/no-price-here" in page
    assert f"run {played_run.pk}" in page


def test_the_panel_waits_for_a_set(admin_client_, baseline):
    response = admin_client_.get(reverse("benchmark:run_forecast"), {"repetitions": 1})
    assert "Choose a set" in response.content.decode()


def test_dry_run_prints_the_forecast_and_creates_nothing(played_run):
    before = [table.objects.count() for table in (Run, Conversation, ModelCall, AuditEvent)]
    out = StringIO()
    call_command(
        "run_benchmark", "--set", str(played_run.benchmark_set_id), "--model", "openai/gpt-4o-mini",
        "--repetitions", "3", "--dry-run", stdout=out,
    )  # fmt: skip
    assert [table.objects.count() for table in (Run, Conversation, ModelCall, AuditEvent)] == before
    text = out.getvalue()
    assert "agent: openai/gpt-4o-mini · baseline" in text and "total cost: $" in text
    assert "prediction interval" in text
