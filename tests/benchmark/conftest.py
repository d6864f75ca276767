"""Fixtures for the benchmark Django layer: data built through the real services, offline.

Every model call goes to the offline scripted provider (or a fake router wrapping it), and
the model-response cache lives in memory so no test sees another's cached answers.
"""

from dataclasses import replace
from decimal import Decimal

import pytest

from benchmark.services import agents, cases, conversations
from benchmark.services.runs import AgentChoice, run_launch
from llm.clients import ModelRouter
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError
from llm.engine.providers.offline import OfflineProvider

SET_SIZE = 3


@pytest.fixture(autouse=True)
def in_memory_model_cache(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "llm"},
    }
    shared_routers = conversations.model_router
    shared_routers.cache_clear()
    yield
    shared_routers.cache_clear()


class FakeRouter:
    """Answers like the offline provider, with per-purpose failures and a price per call.

    `fail` maps a purpose to the exception its calls raise. `scripted_as` maps a model string
    (a real one, so prices.yaml knows it) to the offline behaviour that answers for it.
    """

    def __init__(self, *, fail=None, scripted_as=None, price=None):
        self.fail = fail or {}
        self.scripted_as = scripted_as or {}
        self.price = price
        self.offline = ModelRouter(use_cache=False)

    def chat(self, request: ChatRequest) -> ChatResponse:
        if request.purpose in self.fail:
            raise self.fail[request.purpose]
        behaviour = self.scripted_as.get(request.model)
        if behaviour is None:
            response = self.offline.chat(request)
        else:
            response = OfflineProvider(behaviour).chat(request)
        return replace(response, model=request.model, cost_usd=self.price)


def use_router(monkeypatch, router) -> None:
    """Route the services' model calls through `router` instead of the real providers."""
    monkeypatch.setattr(conversations, "model_router", lambda use_cache, **prices: router)
    monkeypatch.setattr(cases, "model_router", lambda use_cache: router)


def provider_down(purpose: str) -> FakeRouter:
    error = ProviderError("upstream answered 503 three times", kind="server", status=503)
    return FakeRouter(fail={purpose: error})


def priced_router(price: str = "0.50") -> FakeRouter:
    return FakeRouter(scripted_as={"openai/gpt-4o-mini": "careful"}, price=Decimal(price))


@pytest.fixture
def distribution(db):
    return cases.distribution_default_ensure()


def make_set(distribution, *, size=SET_SIZE, seed=7, model="offline/standard", name="Pilot"):
    return cases.benchmark_set_create(
        name=name,
        distribution=distribution,
        size=size,
        sampler_seed=seed,
        generator_model=model,
    )


def enrich_all(benchmark_set):
    for entry_id in cases.pending_entry_ids(benchmark_set):
        cases.entry_enrich(entry_id)
    benchmark_set.refresh_from_db()
    return benchmark_set


@pytest.fixture
def ready_set(distribution):
    return enrich_all(make_set(distribution))


@pytest.fixture
def baseline(db):
    return {config.slug: config for config in agents.agent_configs_ensure_shipped()}["baseline"]


def launch(benchmark_set, config, *, models=("offline/careful",), **options):
    options.setdefault("patient_model", "offline/patient")
    return run_launch(
        name=options.pop("name", "Smoke run"),
        benchmark_set=benchmark_set,
        agents=[AgentChoice(model, config) for model in models],
        **options,
    )


@pytest.fixture
def run(ready_set, baseline):
    return launch(ready_set, baseline, models=("offline/careful", "offline/careless"))


@pytest.fixture
def eager_tasks():
    """Tasks run inside the request, as a worker would run them after the commit."""
    from config.celery import app as celery_app

    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False
