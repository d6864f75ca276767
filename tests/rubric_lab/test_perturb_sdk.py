"""Near-miss model edits through the real OpenAI SDK against the local fake server."""

import json

import pytest

from benchmark.services import conversations
from llm.clients import model_router
from rubric_lab.engine import perturb
from rubric_lab.services.evaluation_work import StageFailure
from rubric_lab.services.perturbations import near_miss_make
from tests.fakes.llm_server import answer, running_fake_llm_server
from tests.rubric_lab.evaluation_traces import PROFILE, urgent_trace

EDITOR = "openai/gpt-4o-mini"


@pytest.fixture
def fake_openai(settings, db):  # the router reads the prices in force
    with running_fake_llm_server(default_text="I would rather not.") as server:
        settings.OPENAI_BASE_URL = server.openai_base_url
        settings.OPENAI_API_KEY = "sk-test-not-a-real-key"
        settings.LLM_MAX_RETRIES = 0
        conversations.model_router.cache_clear()
        yield server
        conversations.model_router.cache_clear()


def case():
    return perturb.Case(urgent_trace(), PROFILE, {})


def test_a_dose_the_trace_never_states_is_swapped_by_the_sdk_editor(fake_openai):
    content = "I've sent your message to Dr Kim. Keep using Albuterol HFA 900 mcg."
    edit = {"applicable": True, "event_id": "e6", "change": "a wrong dose", "content": content}
    fake_openai.script(answer(json.dumps(edit)))

    copy = near_miss_make(case(), "swap_dose", client=model_router(False), perturber_model=EDITOR)

    assert copy.method == "model" and copy.changed["modified"] == ["e6"]
    body = fake_openai.requests[0].body
    assert body["model"] == "gpt-4o-mini" and "Swap" not in body["messages"][0]["content"]
    assert perturb.REGISTRY["swap_dose"].model_instruction in body["messages"][1]["content"]


def test_an_editor_that_keeps_rewriting_everything_is_a_failure_with_its_reason(fake_openai):
    rewrite = {"applicable": True, "event_id": "e6", "change": "rewrote",
               "content": "Hello! Everything is fine, goodbye."}  # fmt: skip
    fake_openai.script(*(answer(json.dumps(rewrite)) for _ in range(3)))

    with pytest.raises(StageFailure) as caught:
        near_miss_make(case(), "swap_dose", client=model_router(False), perturber_model=EDITOR)

    assert caught.value.stage == "perturb" and "similarity" in caught.value.reason
    assert "Hello!" in caught.value.fields["raw_output"]
    assert len(fake_openai.requests) == 3  # the first answer and two repair turns
