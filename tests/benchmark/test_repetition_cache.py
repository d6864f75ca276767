"""Repetitions sample the models independently: with the response cache on, no call of one
repetition is answered from another's cached entry, while replaying the same repetition (a
conversation re-run after a crash) is answered entirely from the cache."""

import pytest
from django.core.cache import caches
from django.test import override_settings

from benchmark.models import ConversationStatus, TraceEvent
from benchmark.services.inline import run_execute_inline
from llm.clients import model_router
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import enriched_set, launched_run

AGENT = "openai-compatible/agent-under-test"
PATIENT = "openai-compatible/patient-simulator"
MEMORY_CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "reps"},
}


@pytest.fixture
def fake(settings):
    with (
        override_settings(CACHES=MEMORY_CACHES),
        running_fake_llm_server(default_text="Could you tell me more?") as server,
    ):
        caches["llm"].clear()
        settings.OPENAI_COMPATIBLE_BASE_URL = server.compatible_base_url
        model_router.cache_clear()
        yield server
    model_router.cache_clear()


def model_calls(run) -> int:
    return sum(
        conversation.usage[role]["calls"]
        for conversation in run.conversations.all()
        for role in ("patient", "assistant")
    )


@pytest.mark.django_db(transaction=True)
def test_no_repetition_is_answered_from_another_repetitions_cache(fake):
    run = launched_run(
        enriched_set(name="reps", size=1, sampler_seed=3), name="reps run", models=(AGENT,),
        patient_model=PATIENT, roster_model="offline/patient", repetitions=3, max_turns=3,
        use_cache=True,
    )  # fmt: skip
    run_execute_inline(run, threads=1)
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == 3
    # Every request is identical across repetitions but for the conversation's sample.
    assert len(fake.requests) == model_calls(run)
    assert not TraceEvent.objects.filter(conversation__run=run, cached=True).exists()

    # Replaying the same repetitions (each re-run from its start) costs no request at all.
    asked = len(fake.requests)
    run.conversations.update(status=ConversationStatus.PENDING)
    run.status = "running"
    run.save(update_fields=["status"])
    run_execute_inline(run, threads=1)
    assert len(fake.requests) == asked
    replayed = TraceEvent.objects.filter(conversation__run=run, kind="assistant_message")
    assert replayed.exists() and all(replayed.values_list("cached", flat=True))
