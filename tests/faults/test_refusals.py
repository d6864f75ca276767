"""A model that declines to answer is recorded as a refusal, with its words, on both adapters.

OpenAI sends a refusal in its own field with the content null; Claude stops with the stop
reason "refusal" after whatever it wrote (often nothing). Before, both read as an empty answer.
The agent under test's refusal is its reply: the patient reads it, the judges weigh it, and the
trace marks it. A refusal by the patient model ends the conversation with the model's words in
the error. A refused request for JSON (judges, enrichment, lab stages) fails at once with the
model's words and is neither repaired nor kept in the cache
(tests/llm/providers/test_refusals.py).
"""

import json

import pytest

from benchmark.models import ConversationStatus, Termination
from jury.services.judge_inputs import judge_inputs
from llm.engine.chat import REFUSED_WITHOUT_TEXT
from tests.fakes.llm_server import answer, refused
from tests.faults.test_conversation_faults import fake, one_conversation_run  # noqa: F401
from tests.faults.test_reasoning_across_tools import (  # noqa: F401 - the endpoints' fixtures
    anthropic_endpoint,
    openai_endpoint,
)

WORDS = "I can't advise on changing your insulin dose; please ask the doctor who prescribed it."
COMPATIBLE = "openai-compatible/agent-under-test"
ANTHROPIC = "anthropic/agent-under-test"
RESPONSES = "openai/agent-under-test@api=responses"


@pytest.mark.parametrize("agent", [COMPATIBLE, ANTHROPIC, RESPONSES])
@pytest.mark.django_db(transaction=True)
def test_the_agents_refusal_is_its_reply_marked_refused(
    fake,  # noqa: F811
    anthropic_endpoint,  # noqa: F811
    openai_endpoint,  # noqa: F811
    agent,
):
    fake.script(refused(WORDS), answer("Is there anything else I can help you with?"))
    conversation = one_conversation_run(agent=agent, max_turns=2)

    assert conversation.status == ConversationStatus.FINISHED, conversation.error
    first, second = conversation.events.filter(kind="assistant_message").order_by("seq")
    assert (first.content, first.refused) == (WORDS, True)
    assert not second.refused
    # The agent's next request carries its refusal as its own earlier turn.
    body = fake.requests[1].body
    history = body.get("messages", body.get("input"))  # the Responses API calls it input
    earlier_turns = [m for m in history if m.get("role") == "assistant"]
    assert WORDS in json.dumps(earlier_turns)
    assert WORDS in judge_inputs(conversation).text.trace


@pytest.mark.django_db(transaction=True)
def test_a_refusal_without_a_word_ends_the_conversation_and_stays_in_the_trace(
    fake,  # noqa: F811
    anthropic_endpoint,  # noqa: F811
):
    fake.script(refused(""))
    conversation = one_conversation_run(agent=ANTHROPIC)

    # Finished, not failed: asking again would not change the model's mind. Counted and shown,
    # never scored, like every agent error.
    assert conversation.status == ConversationStatus.FINISHED
    assert conversation.termination_reason == Termination.AGENT_ERROR
    assert conversation.error == "the assistant refused without a word"
    event = conversation.events.get(kind="assistant_message")
    assert (event.content, event.refused, event.output_tokens) == ("", True, 7)


@pytest.mark.django_db(transaction=True)
def test_the_patient_models_refusal_ends_the_conversation_with_its_words(fake):  # noqa: F811
    fake.script(refused(WORDS))
    conversation = one_conversation_run(patient=COMPATIBLE)

    # Finished, not failed: asking again would not change the model's mind. Counted and shown,
    # never scored, like every agent error.
    assert conversation.status == ConversationStatus.FINISHED
    assert conversation.termination_reason == Termination.AGENT_ERROR
    assert conversation.error == f"the patient model refused: {WORDS}"
    event = conversation.events.get(kind="patient_message")
    assert (event.content, event.model_role, event.refused) == ("", "patient", True)
    assert not conversation.events.filter(kind="assistant_message").exists()


@pytest.mark.parametrize(
    ("text", "expected"), [(WORDS, WORDS), ("", REFUSED_WITHOUT_TEXT)], ids=["words", "silent"]
)
def test_claudes_refusal_reads_its_words_or_says_it_had_none(text, expected):
    from types import SimpleNamespace

    from llm.engine.providers.anthropic_chat import parse_message

    content = [SimpleNamespace(type="text", text=text)] if text else []
    usage = SimpleNamespace(
        input_tokens=3, output_tokens=2, cache_creation_input_tokens=0, cache_read_input_tokens=0
    )
    message = SimpleNamespace(content=content, stop_reason="refusal", usage=usage)
    response = parse_message(message, model=ANTHROPIC, latency_ms=1.0)

    assert (response.refusal, response.text, response.finish_reason) == (expected, text, "refusal")
    assert response.refusal_words == text
