"""Shared fixtures for the jury's Django layer: a small run played offline through the real
services and scored by the offline jury, with judge tasks executed in-process (the Celery task
calls the same function).

Playing and scoring the run takes a couple of seconds, so each test module builds it once,
commits it, and flushes the database when the module ends; every test still runs inside its
own rolled-back transaction, so what a test changes never reaches the next one. The
model-response cache lives in memory for the module, so a second job hits the answers the
first one stored.
"""

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.test import override_settings

from benchmark.models import Run
from benchmark.services import conversations
from jury.models import Jury, ScoringJob
from jury.services import juries, scoring
from tests.support.builders import enriched_set, launched_run, played

AGENT_MODELS = ("offline/careful", "offline/careless")
SET_SIZE = 4
MEMORY_CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "jury"},
}


def play_run() -> Run:
    """4 entries enriched by offline/standard, played by offline/careful and offline/careless."""
    benchmark_set = enriched_set(name="Jury pilot", size=SET_SIZE, sampler_seed=11)
    return played(launched_run(benchmark_set, name="Jury run", models=AGENT_MODELS))


def score_now(job: ScoringJob) -> ScoringJob:
    """Execute every pending judge task in this process, as the workers would."""
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    job.refresh_from_db()
    return job


def scored(run, jury, *, use_cache: bool = True) -> ScoringJob:
    return score_now(scoring.scoring_launch(run=run, jury=jury, use_cache=use_cache))


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The played run's id, committed for the whole module; flushed afterwards."""
    with override_settings(CACHES=MEMORY_CACHES):
        caches["llm"].clear()  # locmem entries outlive a settings override
        conversations.model_router.cache_clear()
        with django_db_blocker.unblock():
            run_id = play_run().pk
        yield run_id
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
        conversations.model_router.cache_clear()


@pytest.fixture(scope="module")
def world_job(world, django_db_blocker):
    """The played run scored once by the offline demo jury, committed for the module: asked
    of the models, whatever the module's earlier tests scored (in their own transactions) and
    left in the response cache, which depends on the order pytest-xdist gives the tests."""
    caches["llm"].clear()
    with django_db_blocker.unblock():
        return scored(Run.objects.get(pk=world), juries.jury_demo_ensure()).pk


@pytest.fixture
def played_run(db, world) -> Run:
    return Run.objects.get(pk=world)


@pytest.fixture
def scored_job(db, world_job) -> ScoringJob:
    return ScoringJob.objects.get(pk=world_job)


@pytest.fixture
def offline_jury(db, world) -> Jury:
    return juries.jury_demo_ensure()
