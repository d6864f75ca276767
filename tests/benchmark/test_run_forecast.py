"""A run's forecast from an earlier run (benchmark.services.forecasts)."""

import pytest

from benchmark.models import ModelCall
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
