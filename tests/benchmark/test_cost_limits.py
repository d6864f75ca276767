"""A cost limit means something: refused beside a model with no price (named), accepted once a
price is given, and it pauses runs and benchmark sets once what they spent reaches it."""

from decimal import Decimal

import pytest
from django.core.cache import caches
from django.urls import reverse

from benchmark.models import BenchmarkSet, ModelCall, Run
from benchmark.services import cases, runs
from benchmark.services.conversations import conversation_execute
from jobs.models import JobStatus
from llm.services import prices
from tests.benchmark.conftest import launch

pytestmark = pytest.mark.django_db

UNPRICED = "openai-compatible/meta-llama/Llama-3.1-8B"
LIMIT = Decimal("5.00")


@pytest.fixture(autouse=True)
def no_cached_answers(in_memory_model_cache):
    """Every call is made and paid for: another test's cached answers would cost nothing."""
    caches["llm"].clear()


def set_price(model: str, figure: str = "1000") -> None:
    """A browser price: offline models answer instantly and, priced like this, cost cents."""
    prices.price_set(model=model, input_per_million=Decimal(figure),
                     output_per_million=Decimal(figure))  # fmt: skip


def dispatch(run) -> list[int]:
    return runs.run_dispatch(run, lambda ids: None)


# --- runs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "models",
    [
        {"models": (UNPRICED,)},
        {"models": ("offline/careful",), "patient_model": UNPRICED},
        {"models": ("offline/careful",), "roster_model": UNPRICED},
    ],
    ids=["agent", "patient", "roster"],
)
def test_a_run_with_a_limit_and_an_unpriced_model_is_refused_naming_it(ready_set, baseline, models):
    with pytest.raises(runs.RunError, match="no price") as refusal:
        launch(ready_set, baseline, cost_limit_usd=LIMIT, **models)

    assert UNPRICED in str(refusal.value)
    assert not Run.objects.exists()


def test_a_run_without_a_limit_may_call_an_unpriced_model(ready_set, baseline):
    run = launch(ready_set, baseline, models=(UNPRICED,))

    assert run.cost_limit_usd is None


def test_the_same_run_is_accepted_once_staff_set_the_models_price(ready_set, baseline):
    prices.price_set(model=UNPRICED, input_per_million=Decimal("0.2"),
                     output_per_million=Decimal("0.6"))  # fmt: skip

    run = launch(ready_set, baseline, models=(UNPRICED,), cost_limit_usd=LIMIT)

    assert run.cost_limit_usd == LIMIT


def test_the_limit_pauses_a_run_once_its_calls_cost_that_much(ready_set, baseline):
    set_price("offline/careful")
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("0.01"), concurrency=1)
    [first] = dispatch(run)
    assert conversation_execute(first)

    assert dispatch(run) == []
    run.refresh_from_db()
    assert run.status == JobStatus.PAUSED
    assert run.stop_reason.startswith("Cost limit reached: $")


def test_a_run_resumes_only_with_a_limit_above_what_it_spent(ready_set, baseline):
    set_price("offline/careful")
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("0.01"), concurrency=1)
    conversation_execute(dispatch(run)[0])
    dispatch(run)

    with pytest.raises(runs.RunError, match="give a higher limit"):
        runs.run_resume(run)
    runs.run_resume(run, cost_limit_usd=Decimal("10000"))

    assert len(dispatch(run)) == 1


def test_judge_and_lab_calls_accounted_to_a_run_do_not_count_against_its_limit(ready_set, baseline):
    run = launch(ready_set, baseline, cost_limit_usd=Decimal("1.00"))
    for purpose in ("judge", "rubric_synthesis"):
        ModelCall.objects.create(
            run=run, purpose=purpose, model="offline/standard", cost_usd=Decimal("3")
        )

    assert dispatch(run)


# --- the run launch form ----------------------------------------------------------------------


def run_form(ready_set, baseline, **overrides) -> dict:
    return {
        "name": "Priced run",
        "benchmark_set": ready_set.pk,
        "models": UNPRICED,
        "agent_configs": [baseline.pk],
        "patient_model": "offline/patient",
        "roster_model": "offline/patient",
        "repetitions": 1,
        "concurrency": 4,
        "max_turns": 15,
        "seed": 0,
        "cost_limit_usd": "5",
        **overrides,
    }


def test_the_launch_form_refuses_a_limit_beside_an_unpriced_model_then_accepts_it_once_priced(
    admin_client_, ready_set, baseline
):
    refused = admin_client_.post(reverse("benchmark:run_new"), run_form(ready_set, baseline))
    assert refused.status_code == 200
    page = refused.content.decode()
    assert "needs a price for every model" in page and UNPRICED in page
    assert not Run.objects.exists()

    admin_client_.post(
        reverse("benchmark:prices"),
        {"model": UNPRICED, "input_per_million": "0.2", "output_per_million": "0.6"},
    )
    accepted = admin_client_.post(reverse("benchmark:run_new"), run_form(ready_set, baseline))

    assert accepted.status_code == 302
    assert Run.objects.get().cost_limit_usd == LIMIT


# --- benchmark sets -------------------------------------------------------------------------


def new_set(distribution, *, model="offline/standard", limit=None, size=3) -> BenchmarkSet:
    return cases.benchmark_set_create(
        name="Limited", distribution=distribution, size=size, sampler_seed=7,
        generator_model=model, cost_limit_usd=limit,
    )  # fmt: skip


def test_a_set_with_a_limit_and_an_unpriced_generator_is_refused_naming_it(distribution):
    with pytest.raises(cases.BenchmarkSetError, match=UNPRICED):
        new_set(distribution, model=UNPRICED, limit=LIMIT)
    assert not BenchmarkSet.objects.exists()

    set_price(UNPRICED, "0.5")
    assert new_set(distribution, model=UNPRICED, limit=LIMIT).cost_limit_usd == LIMIT


def enrich_by_dispatch(benchmark_set, capture) -> int:
    """One dispatch, its entries enriched here as the workers would; how many were sent."""
    sent: list = []

    def send(tasks):
        sent.extend(tasks)
        for entry_id, token in tasks:
            cases.entry_enrich(entry_id, token)

    with capture(execute=True):
        cases.enrichment_dispatch(benchmark_set, send)
    return len(sent)


def test_the_limit_pauses_a_set_and_a_higher_limit_resumes_it(
    distribution, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(cases, "ENRICHMENT_WINDOW", 1)
    set_price("offline/standard")
    benchmark_set = new_set(distribution, limit=Decimal("0.01"))

    assert enrich_by_dispatch(benchmark_set, django_capture_on_commit_callbacks) == 1
    assert enrich_by_dispatch(benchmark_set, django_capture_on_commit_callbacks) == 0
    benchmark_set.refresh_from_db()
    assert benchmark_set.status == JobStatus.PAUSED
    assert "Cost limit reached" in benchmark_set.stop_reason
    assert benchmark_set.progress()["pending"] == 2

    cases.benchmark_set_resume(benchmark_set, cost_limit_usd=Decimal("10000"))
    assert enrich_by_dispatch(benchmark_set, django_capture_on_commit_callbacks) == 1


def test_the_set_form_takes_a_limit_and_refuses_it_beside_an_unpriced_model(
    researcher_client, distribution
):
    form = {"name": "Web set", "distribution": distribution.pk, "size": 2, "sampler_seed": 1,
            "generator_model": UNPRICED, "cost_limit_usd": "3"}  # fmt: skip

    refused = researcher_client.post(reverse("benchmark:set_new"), form)

    assert refused.status_code == 200 and UNPRICED in refused.content.decode()
    assert not BenchmarkSet.objects.exists()


def test_a_paused_set_page_offers_a_resume_with_a_new_limit(researcher_client, distribution):
    benchmark_set = new_set(distribution, limit=Decimal("0.01"))
    BenchmarkSet.objects.filter(pk=benchmark_set.pk).update(
        status=JobStatus.PAUSED, stop_reason="Cost limit reached: $0.02 spent of $0.01."
    )

    page = researcher_client.get(reverse("benchmark:set", args=[benchmark_set.pk])).content

    assert b"Cost limit reached: $0.02 spent of $0.01." in page
    assert reverse("benchmark:set_resume", args=[benchmark_set.pk]).encode() in page
