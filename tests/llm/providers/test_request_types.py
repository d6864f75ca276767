"""The fake server refuses what the real APIs refuse: it checks each body against the SDK's own
request types (tests/fakes/request_types.py), so an adapter that sends an unknown field, a
value of the wrong type or too little fails its tests as it would fail in production."""

import httpx
import pytest

from tests.fakes.request_types import request_problems

USER = {"role": "user", "content": "Can I move my appointment?"}
TOOL_TURN = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "list_appointments", "arguments": "{}"},
        }
    ],
}


def openai_body(**fields):
    return {"model": "m", "messages": [USER], **fields}


def anthropic_body(**fields):
    return {"model": "m", "max_tokens": 1024, "messages": [USER], **fields}


@pytest.mark.parametrize("dialect", ["openai", "openai-compatible"])
def test_a_valid_openai_request_passes(dialect):
    body = openai_body(messages=[USER, TOOL_TURN], temperature=0.2, max_completion_tokens=500)
    assert request_problems(body, dialect) == []


def test_unknown_and_ill_typed_fields_are_named_with_their_path():
    body = openai_body(temprature=0.2, top_p="high", messages=[{**USER, "name": 7}])
    assert request_problems(body, "openai") == [
        "body.temprature: unknown field",
        "body.messages[0].name: 7 is not str",
        "body.top_p: 'high' is not float",
    ]


def test_a_missing_required_field_is_named():
    assert request_problems({"model": "m", "messages": [USER]}, "anthropic") == [
        "body.max_tokens: required"
    ]


def test_vllms_own_fields_pass_only_on_a_compatible_server():
    turn = {**TOOL_TURN, "reasoning_content": "Look first."}
    body = openai_body(messages=[USER, turn], chat_template_kwargs={"enable_thinking": False})
    assert request_problems(body, "openai-compatible") == []
    assert sorted(request_problems(body, "openai")) == [
        "body.chat_template_kwargs: unknown field",
        "body.messages[1].reasoning_content: unknown field",
    ]


def test_claudes_thinking_settings_and_blocks_are_checked():
    thinking = {"type": "thinking", "thinking": "Look first.", "signature": "s"}
    call = {"type": "tool_use", "id": "t1", "name": "list_appointments", "input": {}}
    turn = {"role": "assistant", "content": [thinking, call]}
    good = anthropic_body(
        messages=[USER, turn], thinking={"type": "enabled", "budget_tokens": 2048}
    )
    assert request_problems(good, "anthropic") == []
    unsigned = {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}, call]}
    assert request_problems(anthropic_body(messages=[USER, unsigned]), "anthropic") == [
        "body.messages[1].content[0].signature: required"
    ]


def test_the_fake_answers_an_invalid_body_with_a_400_naming_the_problem(llm_server):
    refused = httpx.post(
        f"{llm_server.openai_base_url}/chat/completions", json=openai_body(temprature=0.2)
    )
    assert refused.status_code == 400
    assert "body.temprature: unknown field" in refused.json()["error"]["message"]
    assert llm_server.requests == []  # refused before it counts as an answered request
    kept = httpx.post(f"{llm_server.openai_base_url}/chat/completions", json=openai_body())
    assert kept.status_code == 200
