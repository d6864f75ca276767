"""`run_benchmark --dry-run --pilot N`: with no finished run of the set, a pilot of N offline
conversations is played first and the forecast learns from it, cache reads included."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import ConversationStatus, Run
from benchmark.services import forecasts
from benchmark.services.runs import AgentChoice
from tests.benchmark.conftest import enrich_all, make_set

pytestmark = pytest.mark.django_db(transaction=True)


def _dry_run(benchmark_set, *extra):
    out = StringIO()
    call_command(
        "run_benchmark", "--set", str(benchmark_set.pk), "--model", "anthropic/claude-opus-4-8",
        "--patient-model", "anthropic/claude-sonnet-4-5", "--dry-run", *extra, stdout=out,
    )  # fmt: skip
    return out.getvalue()


def test_a_pilot_is_played_offline_and_the_forecast_reads_its_cache_hits(distribution, baseline):
    benchmark_set = enrich_all(make_set(distribution))

    text = _dry_run(benchmark_set, "--pilot", "2")

    pilot = Run.objects.get()
    assert pilot.conversations.count() == 2
    assert set(pilot.conversations.values_list("status", flat=True)) == {
        ConversationStatus.FINISHED
    }
    assert pilot.agents.get().model == forecasts.PILOT_AGENT_MODEL
    assert f"playing a pilot of 2 conversations with the offline scripts (run {pilot.pk})" in text
    assert f"from: run {pilot.pk} " in text and "of the same set" in text

    result = forecasts.run_forecast(
        benchmark_set=benchmark_set,
        # Not Haiku 4.5, which caches no prefix under 4,096 tokens: the pilot reads less a call.
        agents=[AgentChoice("anthropic/claude-opus-4-8", baseline)],
        patient_model="anthropic/claude-sonnet-4-5",
    )
    agent, patient = result.roles[0], result.roles[1]
    for role in (agent, patient):
        read = role.figures["cached_input_tokens"].estimate
        assert 0.5 * role.figures["input_tokens"].estimate < read, role.role
    # Read at a tenth of the price: the forecast costs less than the same tokens uncached.
    tokens_in, tokens_out = (agent.figures[f].estimate for f in ("input_tokens", "output_tokens"))
    assert agent.cost.estimate < 0.6 * (tokens_in * 5.0 + tokens_out * 25.0) / 1e6


def test_no_pilot_is_played_when_the_set_has_a_finished_run(distribution, baseline):
    benchmark_set = enrich_all(make_set(distribution))
    _dry_run(benchmark_set, "--pilot", "1")

    text = _dry_run(benchmark_set, "--pilot", "1")

    assert Run.objects.count() == 1
    assert "playing a pilot" not in text


def test_pilot_without_dry_run_is_refused(distribution):
    benchmark_set = enrich_all(make_set(distribution))
    with pytest.raises(CommandError, match="--pilot goes with --dry-run"):
        call_command(
            "run_benchmark", "--name", "x", "--set", str(benchmark_set.pk),
            "--model", "offline/careful", "--pilot", "2",
        )  # fmt: skip
    assert not Run.objects.exists()


def test_a_pilot_of_no_conversation_is_refused(distribution):
    benchmark_set = enrich_all(make_set(distribution))
    with pytest.raises(CommandError, match="at least one conversation"):
        _dry_run(benchmark_set, "--pilot", "0")
