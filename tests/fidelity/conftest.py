"""A small run played offline with the lapsing scripted patient (offline/lapses), committed
once per module and flushed afterwards; each test runs in its own rolled-back transaction."""

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.test import override_settings

from benchmark.models import Run
from benchmark.services import conversations
from fidelity.models import FidelityReview
from fidelity.services import reviews
from tests.support.builders import enriched_set, launched_run, played

MEMORY_CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "fidelity"},
}
SET_SIZE = 8


def review_now(review: FidelityReview) -> FidelityReview:
    """Execute every pending unit in this process, as the workers would."""
    for pk in review.conversation_reviews.filter(status="pending").values_list("pk", flat=True):
        reviews.conversation_review_execute(pk)
    review.refresh_from_db()
    return review


@pytest.fixture(scope="module")
def fidelity_world(django_db_setup, django_db_blocker):
    with override_settings(CACHES=MEMORY_CACHES):
        caches["llm"].clear()
        conversations.model_router.cache_clear()
        with django_db_blocker.unblock():
            benchmark_set = enriched_set(name="Fidelity set", size=SET_SIZE, sampler_seed=5)
            run = played(
                launched_run(benchmark_set, name="Fidelity run", patient_model="offline/lapses")
            )
            review = review_now(reviews.review_launch(run=run, reviewer_model="offline/reviewer"))
        yield run.pk, review.pk
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)
        conversations.model_router.cache_clear()


@pytest.fixture
def lapsing_run(db, fidelity_world) -> Run:
    return Run.objects.get(pk=fidelity_world[0])


@pytest.fixture
def finished_review(db, fidelity_world) -> FidelityReview:
    return FidelityReview.objects.get(pk=fidelity_world[1])
