"""The enrichment forecast (benchmark.services.forecasts): a set enriched in batches is priced
at the batch price, and `generate_set --dry-run` prints it for a new set, creating nothing."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import BenchmarkSet, ModelCall
from benchmark.services import forecasts
from llm.services.prices import catalog_in_force

pytestmark = pytest.mark.django_db

MODEL = "openai/gpt-4o-mini"


def test_enrichment_in_batches_is_forecast_at_the_batch_price(ready_set):
    discount = float(catalog_in_force().price_for(MODEL).batch_discount)
    assert 0 < discount < 1  # the price file gives this model a batch price
    live = forecasts.enrichment_forecast(ready_set, cases=300, model=MODEL)
    batched = forecasts.enrichment_forecast(ready_set, cases=300, model=MODEL, batch=True)
    assert live.calls == batched.calls > 0
    assert batched.cost.estimate == pytest.approx(live.cost.estimate * (1 - discount))
    assert batched.cost.high == pytest.approx(live.cost.high * (1 - discount))
    assert "batch price" in batched.source and "batch" not in live.source


def test_a_new_set_learns_from_the_newest_enriched_set_and_says_which(ready_set):
    result = forecasts.new_set_forecast(size=120, model=MODEL, batch=True)
    (role,) = result.roles
    per_case = ready_set.model_calls.filter(purpose="enrichment").count() / ready_set.size
    assert role.role == "enrichment" and role.units == round(per_case * 120)
    assert (
        f"set {ready_set.pk} " in result.source
        and "enriched with offline/standard" in result.source
    )
    assert result.source.endswith("in batches (batch price)")
    same = forecasts.new_set_forecast(size=120, model=ready_set.generator_model)
    assert "enriched with the same model" in same.source


def test_with_no_enriched_set_the_forecast_asks_for_a_small_one(db):
    result = forecasts.new_set_forecast(size=50, model=MODEL)
    assert result.source == forecasts.NO_ENRICHMENT_SOURCE
    assert result.unobserved == ["enrichment"] and result.cost is None


def _dry_run(*extra) -> str:
    out = StringIO()
    call_command(
        "generate_set", "--name", "Big", "--size", "200", "--model", MODEL, "--dry-run", *extra,
        stdout=out,
    )  # fmt: skip
    return out.getvalue()


def test_generate_set_dry_run_prints_the_batch_priced_forecast_and_creates_nothing(ready_set):
    before = (BenchmarkSet.objects.count(), ModelCall.objects.count())
    live, batched = _dry_run(), _dry_run("--batch")
    assert (BenchmarkSet.objects.count(), ModelCall.objects.count()) == before
    assert "enrichment" in live and "total cost: $" in live
    assert "in batches (batch price)" in batched and "batch" not in live
    live_total = forecasts.new_set_forecast(size=200, model=MODEL).cost.estimate
    assert f"total cost: ${live_total * 0.5:,.2f}" in batched


def test_generate_set_dry_run_sets_no_price(ready_set):
    with pytest.raises(CommandError, match="drop --price"):
        _dry_run("--price", f"{MODEL}=1,2")
