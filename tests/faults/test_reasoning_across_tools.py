"""A reasoning model's thinking goes back with the turn that called a tool, through the real SDKs.

The fake server keeps the rule the providers document: an assistant turn that called a tool
comes back in the next request with the reasoning it was answered with, unchanged (Anthropic's
thinking and redacted_thinking blocks with their signatures; the reasoning field of an
OpenAI-compatible server such as vLLM serving GPT-OSS), or the request is refused with a 400.
The reasoning is kept in the trace for reading and reaches neither the patient nor the judges.
"""

import pytest

from benchmark.models import ConversationStatus
from jury.services.judge_inputs import judge_inputs
from tests.fakes.llm_server import FakeToolCall, answer, thinking_signature
from tests.faults.test_conversation_faults import fake, one_conversation_run  # noqa: F401

THOUGHT = "She asked about Tuesday; look up her appointments before answering."
REDACTED = "EncryptedOpaqueThinking=="
LOOKUP = FakeToolCall(id="call_lookup", name="list_appointments", arguments="{}")
ANTHROPIC_AGENT = "anthropic/agent-under-test"
COMPATIBLE_AGENT = "openai-compatible/agent-under-test"
RESPONSES_AGENT = "openai/agent-under-test@api=responses"


@pytest.fixture
def anthropic_endpoint(fake, settings):  # noqa: F811
    settings.ANTHROPIC_BASE_URL = fake.anthropic_base_url
    settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"


@pytest.fixture
def openai_endpoint(fake, settings):  # noqa: F811
    settings.OPENAI_BASE_URL = fake.openai_base_url
    settings.OPENAI_API_KEY = "sk-test-not-a-real-key"


def tool_turn_sent_back(fake, agent):  # noqa: F811
    """The assistant turn that called the tool, as the second agent request carried it."""
    agent_requests = [r.body for r in fake.requests if r.body.get("tools")]
    return next(
        message
        for message in agent_requests[1]["messages"]
        if message["role"] == "assistant" and ("tool_calls" in message or _has_tool_use(message))
    )


def _has_tool_use(message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)


@pytest.mark.django_db(transaction=True)
def test_claudes_thinking_goes_back_unchanged_with_the_turn_that_called_a_tool(
    fake,  # noqa: F811
    anthropic_endpoint,
):
    fake.script(
        answer(tool_calls=(LOOKUP,), reasoning=THOUGHT, redacted_reasoning=REDACTED),
        answer("You have nothing booked on Tuesday; shall I find you a slot?"),
    )
    conversation = one_conversation_run(agent=ANTHROPIC_AGENT)

    assert conversation.status == ConversationStatus.FINISHED, conversation.error
    sent_back = tool_turn_sent_back(fake, ANTHROPIC_AGENT)["content"]
    assert sent_back[:2] == [
        {"type": "thinking", "thinking": THOUGHT, "signature": thinking_signature(THOUGHT)},
        {"type": "redacted_thinking", "data": REDACTED},
    ]
    assert sent_back[2]["type"] == "tool_use"
    assert_kept_for_reading_and_hidden_from_patient_and_judges(conversation, fake)


@pytest.mark.django_db(transaction=True)
def test_a_compatible_servers_reasoning_field_goes_back_with_the_turn_that_called_a_tool(
    fake,  # noqa: F811
):
    fake.script(
        answer(tool_calls=(LOOKUP,), reasoning=THOUGHT),
        answer("You have nothing booked on Tuesday; shall I find you a slot?"),
    )
    conversation = one_conversation_run(agent=COMPATIBLE_AGENT)

    assert conversation.status == ConversationStatus.FINISHED, conversation.error
    assert tool_turn_sent_back(fake, COMPATIBLE_AGENT)["reasoning_content"] == THOUGHT
    assert_kept_for_reading_and_hidden_from_patient_and_judges(conversation, fake)


@pytest.mark.django_db(transaction=True)
def test_the_responses_apis_reasoning_item_goes_back_before_the_call_it_led_to(
    fake,  # noqa: F811
    openai_endpoint,
):
    fake.script(
        answer(tool_calls=(LOOKUP,), reasoning=THOUGHT),
        answer("You have nothing booked on Tuesday; shall I find you a slot?"),
    )
    conversation = one_conversation_run(agent=RESPONSES_AGENT)

    assert conversation.status == ConversationStatus.FINISHED, conversation.error
    second = [r.body for r in fake.requests if r.path == "/v1/responses"][1]
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    call = kinds.index("function_call")
    reasoning = second["input"][call - 1]
    assert reasoning["type"] == "reasoning" and reasoning["summary"][0]["text"] == THOUGHT
    assert reasoning["encrypted_content"] == f"enc:{thinking_signature(THOUGHT)}"
    assert second["store"] is False and second["include"] == ["reasoning.encrypted_content"]
    assert_kept_for_reading_and_hidden_from_patient_and_judges(conversation, fake)


@pytest.mark.django_db(transaction=True)
def test_the_fake_refuses_a_tool_turn_sent_back_without_its_thinking(fake, settings):  # noqa: F811
    """The rule the tests above rely on: a client that drops the thinking gets a 400."""
    import httpx

    def messages(*history):
        body = {"model": "claude-test", "max_tokens": 2048, "messages": list(history)}
        return httpx.post(f"{fake.url}/v1/messages", json=body)

    fake.script(answer(tool_calls=(LOOKUP,), reasoning=THOUGHT))
    first = messages({"role": "user", "content": "Anything on Tuesday?"}).json()
    turn_without_thinking = [b for b in first["content"] if b["type"] == "tool_use"]
    refused = messages({"role": "assistant", "content": turn_without_thinking})
    assert refused.status_code == 400
    assert "reasoning it came with" in refused.json()["error"]["message"]
    kept = messages({"role": "assistant", "content": first["content"]})
    assert kept.status_code == 200


def test_the_fake_refuses_a_function_call_sent_back_without_its_reasoning_item(fake):  # noqa: F811
    import httpx

    def responses(*items):
        return httpx.post(f"{fake.url}/v1/responses", json={"model": "m", "input": list(items)})

    fake.script(answer(tool_calls=(LOOKUP,), reasoning=THOUGHT))
    output = responses({"role": "user", "content": "Anything on Tuesday?"}).json()["output"]
    reasoning, call = output[0], output[-1]
    sent_call = {key: call[key] for key in ("type", "call_id", "name", "arguments")}
    assert responses(sent_call).status_code == 400
    sent_reasoning = {key: reasoning[key] for key in ("type", "id", "summary", "encrypted_content")}
    assert responses(sent_reasoning, sent_call).status_code == 200


def assert_kept_for_reading_and_hidden_from_patient_and_judges(conversation, fake):  # noqa: F811
    reasoning = conversation.events.filter(kind="reasoning")
    assert any(THOUGHT in event.content for event in reasoning)  # the trace keeps it to read
    visible = conversation.events.exclude(kind="reasoning").values_list("content", flat=True)
    assert not any(THOUGHT in (text or "") for text in visible)
    assert THOUGHT not in judge_inputs(conversation).text.trace  # what a judge reads
