"""What each provider adapter sends for each role, kept as fixtures and checked against the
SDKs' own request types.

Every role's real requests are captured from the offline flows (enrichment, roster, the
simulated patient, the agent under test on its first turn and on the turn after a tool call
with the reasoning it came with, a judge, a rubric-lab edit), rendered by each adapter
(OpenAI's chat completions, an OpenAI-compatible server, Anthropic, OpenAI's Responses API)
and checked with the fake server's request check (tests/fakes/request_types.py).
tests/fixtures/requests/ keeps one recorded body per adapter and role: a change to what is
sent (a field added, dropped or of another type) fails here until the fixture is written again
on purpose:

    UPDATE_REQUEST_FIXTURES=1 .venv/bin/python -m pytest tests/llm/test_recorded_requests.py
"""

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from benchmark.services.inline import run_execute_inline
from jury.services import juries, scoring
from llm.clients import model_router
from llm.engine.chat import Message, ToolCall
from llm.engine.providers.anthropic_chat import AnthropicChatProvider
from llm.engine.providers.client import ModelClient
from llm.engine.providers.openai_chat import REASONING_FIELD_BLOCK, OpenAIChatProvider
from llm.engine.providers.openai_responses import REASONING_ITEM_BLOCK, OpenAIResponsesProvider
from llm.engine.seeds import provider_seed
from rubric_lab.engine import perturb
from rubric_lab.services.perturbations import near_miss_make
from tests.fakes.request_types import request_problems
from tests.rubric_lab.evaluation_traces import PROFILE, urgent_trace
from tests.support.builders import enriched_set, launched_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "requests"
UPDATE = os.environ.get("UPDATE_REQUEST_FIXTURES") == "1"
ROLES = ("enrichment", "roster", "patient", "assistant", "assistant_after_tool", "judge", "perturb")
THOUGHT = "Check her appointments before answering."


def adapters():
    """(name, dialect, render) of each adapter, as the client builds them."""
    openai = OpenAIChatProvider(
        model_name="model-under-test",
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        timeout_seconds=1,
    )
    compatible = OpenAIChatProvider(
        model_name="model-under-test",
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        timeout_seconds=1,
        max_tokens_field="max_tokens",
    )
    anthropic = AnthropicChatProvider(
        model_name="model-under-test", api_key="k", base_url="http://127.0.0.1:9", timeout_seconds=1
    )
    responses = OpenAIResponsesProvider(
        model_name="model-under-test",
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        timeout_seconds=1,
    )
    return (
        ("openai", "openai", openai.render),
        ("openai-compatible", "openai-compatible", compatible.render),
        ("anthropic", "anthropic", anthropic.render),
        ("openai-responses", "openai-responses", responses.render),
    )


def captured(monkeypatch):
    """The first request of each role, as the offline flows make them."""
    seen = {}
    original = ModelClient.chat

    def spy(self, request):
        seen.setdefault(request.purpose, request)
        return original(self, request)

    monkeypatch.setattr(ModelClient, "chat", spy)
    run = launched_run(
        enriched_set(name="recorded", size=1, sampler_seed=3),
        name="recorded run",
        models=("offline/careful",),
        patient_model="offline/patient",
        roster_model="offline/standard",
        use_cache=False,
    )
    run_execute_inline(run, threads=1)
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure(), use_cache=False)
    scoring.judge_score_execute(job.scores.order_by("pk").first().pk)
    case = perturb.Case(urgent_trace(), PROFILE, {})
    editor = "offline/surgical"
    near_miss_make(case, "swap_dose", client=model_router(False), perturber_model=editor)
    return seen


# The reasoning each provider returns with a turn that called a tool (OpenAI's chat
# completions return none), as its adapter keeps it.
KEPT_REASONING = {
    "openai": (),
    "openai-compatible": (
        {"type": REASONING_FIELD_BLOCK, "field": "reasoning_content", "text": THOUGHT},
    ),
    "anthropic": ({"type": "thinking", "thinking": THOUGHT, "signature": "sig"},),
    "openai-responses": (
        {
            "type": REASONING_ITEM_BLOCK,
            "item": {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": THOUGHT}],
                "encrypted_content": "opaque",
            },
        },
    ),
}


def _after_a_tool_call(first, dialect):
    """The agent's next request after a turn that called a tool, its reasoning kept."""
    call = ToolCall("call_1", "list_appointments", "{}")
    blocks = KEPT_REASONING[dialect]
    turn = Message(role="assistant", content="", tool_calls=(call,), reasoning_blocks=blocks)
    result = Message(
        role="tool", content="[]", tool_call_id="call_1", tool_name="list_appointments"
    )
    return replace(first, messages=first.messages + (turn, result))


def skeleton(value):
    """The shape of a body: its keys and the JSON type of each value (texts and numbers vary
    with the case drawn; the fields and their types are what the provider checks)."""
    if isinstance(value, dict):
        return {key: skeleton(item) for key, item in value.items()}
    if isinstance(value, list):
        return [skeleton(item) for item in value]
    return type(value).__name__


@pytest.mark.django_db(transaction=True)
def test_each_adapter_sends_each_role_a_request_its_sdk_allows(monkeypatch):
    requests = captured(monkeypatch)
    for role in ROLES:
        for adapter, dialect, render in adapters():
            check_role(requests, role, adapter, dialect, render)


def check_role(requests, role, adapter, dialect, render):
    if role == "assistant_after_tool":
        request = _after_a_tool_call(requests["assistant"], dialect)
    else:
        assert role in requests, f"no {role} request was made: {sorted(requests)}"
        request = requests[role]
    # The seed a model whose family takes one gets (the offline models these flows call get
    # none): each adapter sends it or leaves it out.
    request = replace(request, seed=provider_seed(request.sample, request.purpose))
    body = render(request)
    assert request_problems(body, dialect) == [], (adapter, role)
    fixture = FIXTURES / f"{adapter}-{role}.json"
    if UPDATE:
        fixture.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    recorded = json.loads(fixture.read_text())
    assert request_problems(recorded, dialect) == []
    assert skeleton(body) == skeleton(recorded), f"{fixture.name} no longer matches"
