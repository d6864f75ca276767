"""The command line: a cost limit beside an unpriced model is refused unless --price gives
one, the limit pauses the run, and the summary says unknown and cached, never a bare $0."""

from datetime import datetime
from decimal import Decimal
from functools import partial

import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from benchmark.models import BenchmarkSet, Run
from benchmark.services import runs
from jobs.models import JobStatus
from jobs.services.cli import cost_text
from llm.models import ModelPrice
from llm.services import prices
from tests.benchmark.conftest import FakeRouter, provider_down, use_router
from tests.support.builders import enriched_set

UNPRICED = "openai-compatible/agent-under-test"


@pytest.fixture
def fresh_cache(in_memory_model_cache):
    caches["llm"].clear()


def run_benchmark(capsys, name: str, set_id: int, *options: str) -> str:
    call_command(
        "run_benchmark", "--name", name, "--set", str(set_id), "--inline", "--max-turns", "3",
        *options,
    )  # fmt: skip
    return capsys.readouterr().out


def test_the_cost_line_says_unknown_and_cached_rather_than_zero():
    assert cost_text(cost=None, calls=4, cached=0) == "unknown (some calls have no price)"
    assert cost_text(cost=Decimal(0), calls=4, cached=4) == "nothing spent now (all 4 calls cached)"
    assert cost_text(cost=Decimal("0.5"), calls=4, cached=1) == "$0.5000, 1 of 4 calls cached"


@pytest.mark.django_db(transaction=True)
def test_the_run_summary_says_cached_for_a_replayed_run_and_unknown_for_unpriced_calls(
    capsys, fresh_cache, monkeypatch
):
    set_id = enriched_set(name="cli", size=1, sampler_seed=3).pk
    first = run_benchmark(capsys, "first", set_id, "--model", "offline/careful")
    # A reproduction runs on the first run's clock (the agent is told the time, to the
    # minute): launched a minute later on its own clock, it would rightly ask again.
    clock = datetime.fromisoformat(Run.objects.get(name="first").config["clock"])
    monkeypatch.setattr(runs, "run_launch", partial(runs.run_launch, clock=clock))
    replayed = run_benchmark(capsys, "replayed", set_id, "--model", "offline/careful")
    use_router(monkeypatch, FakeRouter(scripted_as={UNPRICED: "careful"}, price=None))
    unpriced = run_benchmark(capsys, "unpriced", set_id, "--model", UNPRICED)

    assert "1 finished" in first and "cost $0.0000." in first  # offline: priced at zero
    assert "calls cached)." in replayed and "nothing spent now (all" in replayed
    assert "$0.0000" not in replayed
    assert "cost unknown (some calls have no price)." in unpriced


@pytest.mark.django_db(transaction=True)
def test_a_cost_limit_beside_an_unpriced_model_is_refused_unless_price_gives_one(
    capsys, fresh_cache, monkeypatch
):
    set_id = enriched_set(name="cli", size=1, sampler_seed=3).pk
    use_router(monkeypatch, FakeRouter(scripted_as={UNPRICED: "careful"}, price=None))

    with pytest.raises(CommandError, match=f"{UNPRICED} has no price"):
        run_benchmark(capsys, "limited", set_id, "--model", UNPRICED, "--cost-limit", "5")
    assert not Run.objects.exists()

    out = run_benchmark(capsys, "limited", set_id, "--model", UNPRICED, "--cost-limit", "5",
                        "--price", f"{UNPRICED}=0.15,0.60")  # fmt: skip

    assert "Launched run" in out and Run.objects.get().cost_limit_usd == Decimal("5")
    row = ModelPrice.objects.get(model=UNPRICED)
    assert row.note == "set with --price on run_benchmark"
    assert AuditEvent.objects.filter(action="price.changed", object_id=str(row.pk)).exists()


@pytest.mark.django_db(transaction=True)
def test_the_limit_pauses_a_cli_run_and_the_summary_says_why(capsys, fresh_cache):
    set_id = enriched_set(name="cli", size=3, sampler_seed=5).pk

    with pytest.raises(CommandError) as refusal:  # an unfinished run exits non-zero
        run_benchmark(capsys, "paused", set_id, "--model", "offline/careful",
                      "--concurrency", "1", "--cost-limit", "0.01",
                      "--price", "offline/careful=1000,1000")  # fmt: skip

    run = Run.objects.get()
    assert run.status == JobStatus.PAUSED
    message = str(refusal.value)
    assert "1 finished" in message and "2 pending" in message
    assert "Not finished: the run is paused: Cost limit reached: $" in message


@pytest.mark.django_db(transaction=True)
def test_generate_set_takes_a_cost_limit_and_stops_at_it(capsys, fresh_cache):
    with pytest.raises(CommandError, match=f"{UNPRICED} has no price"):
        call_command("generate_set", "--name", "s", "--size", "3", "--model", UNPRICED,
                     "--cost-limit", "1", "--inline")  # fmt: skip

    call_command("generate_set", "--name", "limited", "--size", "3", "--inline",
                 "--cost-limit", "0.01", "--price", "offline/standard=1000,1000")  # fmt: skip

    benchmark_set = BenchmarkSet.objects.get(name="limited")
    out = capsys.readouterr().out
    assert benchmark_set.status == JobStatus.PAUSED
    assert "1 ready, 0 failed, 2 pending; cost $" in out and "Cost limit reached" in out
    assert prices.catalog_in_force().price_for("offline/standard").input_per_million == 1000


@pytest.mark.django_db
def test_generate_set_fails_saying_why_when_every_case_failed(monkeypatch):
    use_router(monkeypatch, provider_down("enrichment"))

    with pytest.raises(CommandError, match="0 ready, 2 failed, 0 pending.*All 2 cases failed"):
        call_command("generate_set", "--name", "broken", "--size", "2", "--inline")

    assert BenchmarkSet.objects.get(name="broken").status == JobStatus.FAILED
