"""Provider faults and misbehaving models, through the real SDK path, end in recorded states.

Both simulated roles talk to a local fake server in the OpenAI wire format; nothing of ours is
mocked. Each case must end with a defined termination reason, and the run must finish.
"""

import json

import pytest

from benchmark.models import ConversationStatus, Termination
from benchmark.services import runs
from benchmark.services.inline import run_execute_inline
from jobs.models import JobStatus
from llm.clients import model_router
from tests.fakes.llm_server import (
    FakeToolCall,
    answer,
    malformed,
    rate_limited,
    running_fake_llm_server,
    server_error,
)
from tests.support.builders import enriched_set, launched_run

AGENT = "openai-compatible/agent-under-test"
PATIENT = "openai-compatible/patient-simulator"
TOKEN = "[DROPPED OFF CONVERSATION]"


@pytest.fixture
def fake(settings):
    with running_fake_llm_server(default_text="Could you tell me more?") as server:
        settings.OPENAI_COMPATIBLE_BASE_URL = server.compatible_base_url
        settings.LLM_MAX_RETRIES = 2
        model_router.cache_clear()
        yield server
    model_router.cache_clear()


def one_conversation_run(
    *, patient: str = "offline/patient", max_turns: int = 15, agent: str = AGENT
):
    run = launched_run(
        enriched_set(name="faults", size=1, sampler_seed=3), name="faults run",
        models=(agent,), patient_model=patient, roster_model="offline/patient",
        use_cache=False, max_turns=max_turns,
    )  # fmt: skip
    run_execute_inline(run, threads=1)
    run.refresh_from_db()
    assert run.status == JobStatus.FINISHED  # never hangs, whatever happened
    return run.conversations.get()


def kinds(conversation) -> list[str]:
    return list(conversation.events.values_list("kind", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_provider_that_stays_down_ends_as_a_provider_error_with_events_kept(fake):
    fake.script(*[server_error(503)] * 10)
    conversation = one_conversation_run()
    assert conversation.status == ConversationStatus.FAILED
    assert conversation.termination_reason == Termination.PROVIDER_ERROR
    assert "503" in conversation.error
    assert kinds(conversation)[0] == "patient_message"
    assert len(fake.requests) == 3  # the call was retried twice, the conversation never


@pytest.mark.django_db(transaction=True)
def test_a_429_storm_is_waited_out_and_the_conversation_finishes(fake):
    fake.script(*[rate_limited(retry_after="0.05")] * 2, answer("Booked: see you Monday."))
    conversation = one_conversation_run()
    assert conversation.status == ConversationStatus.FINISHED
    assert conversation.termination_reason == Termination.PATIENT_ENDED


@pytest.mark.django_db(transaction=True)
def test_invalid_tool_json_becomes_a_tool_error_the_model_sees(fake):
    broken = FakeToolCall(id="call_1", name="list_appointments", arguments='{"broken": ')
    fake.script(answer(tool_calls=(broken,)), answer("Sorry about that, all sorted."))
    conversation = one_conversation_run()
    result = conversation.events.get(kind="tool_result")
    assert result.ok is False
    assert conversation.status == ConversationStatus.FINISHED
    second_request = fake.requests[1].body["messages"]
    assert any(m["role"] == "tool" and "error" in m["content"] for m in second_request)


@pytest.mark.django_db(transaction=True)
def test_a_truncated_answer_is_kept_and_the_conversation_goes_on(fake):
    fake.script(answer("I can help you sched", truncated=True))
    conversation = one_conversation_run()
    assert conversation.events.filter(
        kind="assistant_message", content__startswith="I can help you sched"
    ).exists()
    assert conversation.status == ConversationStatus.FINISHED


@pytest.mark.django_db(transaction=True)
def test_a_patient_that_never_ends_stops_at_the_turn_cap(fake):
    conversation = one_conversation_run(patient=PATIENT, max_turns=3)
    assert conversation.termination_reason == Termination.TURN_CAP
    assert conversation.assistant_turns == 3


@pytest.mark.django_db(transaction=True)
def test_a_patient_that_ends_on_turn_one_is_recorded_without_assistant_turns(fake):
    fake.script(answer(TOKEN))
    conversation = one_conversation_run(patient=PATIENT)
    assert conversation.termination_reason == Termination.PATIENT_ENDED
    assert conversation.assistant_turns == 0
    assert TOKEN not in json.dumps(list(conversation.events.values_list("content", flat=True)))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("agent", [AGENT, "anthropic/agent-under-test"])
@pytest.mark.parametrize("body", ["{}", "null", "<html>Bad gateway</html>"])
def test_a_malformed_reply_is_a_provider_fault_that_retry_failed_runs_again(
    fake, settings, agent, body
):
    settings.ANTHROPIC_BASE_URL = fake.anthropic_base_url
    settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
    fake.script(*[malformed(body)] * 3)  # the first call and its two retries
    conversation = one_conversation_run(agent=agent)
    assert conversation.status == ConversationStatus.FAILED
    assert conversation.termination_reason == Termination.PROVIDER_ERROR  # never agent_error
    assert "malformed" in conversation.error

    run = conversation.run
    runs.run_resume(run, retry_failed=True)
    run_execute_inline(run, threads=1)
    conversation.refresh_from_db()
    assert conversation.status == ConversationStatus.FINISHED
