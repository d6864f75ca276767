"""OpenAI's Responses API as the second OpenAI adapter (`@api=responses`), through the real SDK
against the fake server, which checks each body against the SDK's ResponseCreateParams."""

from dataclasses import replace

from llm.engine.chat import Message, ToolSpec
from tests.fakes.llm_server import FakeToolCall, answer, refused

MODEL = "openai/gpt-5.5@api=responses,effort=medium"
LOOKUP = ToolSpec("list_appointments", "Her appointments.", {"type": "object", "properties": {}})


def test_the_answer_its_usage_and_the_settings_sent(make_client, llm_server, user_request):
    llm_server.script(answer("See you on Tuesday."))
    response = make_client(MODEL).chat(user_request(MODEL, temperature=0.0, max_tokens=700))

    assert (response.text, response.finish_reason, response.usage.total) == (
        "See you on Tuesday.", "stop", 18
    )  # fmt: skip
    body = llm_server.requests[0].body
    assert llm_server.requests[0].path == "/v1/responses"
    assert body["instructions"] == "You help patients." and body["input"][0]["role"] == "user"
    assert body["reasoning"] == {"effort": "medium"} and body["max_output_tokens"] == 700
    assert "temperature" not in body  # a reasoning model takes none: the role's is dropped


def test_a_cut_off_answer_is_a_length_finish(make_client, llm_server, user_request):
    llm_server.script(answer("See you on", truncated=True))
    assert make_client(MODEL).chat(user_request(MODEL)).finish_reason == "length"


def test_tool_calls_and_their_reasoning_come_back_and_a_refusal_is_a_refusal(
    make_client, llm_server, user_request
):
    call = FakeToolCall("call_9", "list_appointments", "{}")
    llm_server.script(answer(tool_calls=(call,), reasoning="Look first."), refused("I can't."))
    client = make_client(MODEL)

    first = client.chat(user_request(MODEL, tools=(LOOKUP,)))
    assert first.tool_calls[0].id == "call_9" and first.finish_reason == "tool_calls"
    assert first.reasoning == "Look first."
    turn = Message(
        "assistant", tool_calls=first.tool_calls, reasoning_blocks=first.reasoning_blocks
    )
    result = Message("tool", "[]", tool_call_id="call_9", tool_name="list_appointments")
    request = user_request(MODEL, tools=(LOOKUP,))
    second = client.chat(replace(request, messages=(*request.messages, turn, result)))

    assert second.refusal == "I can't." and second.text == ""
    sent = llm_server.requests[1].body["input"]
    assert [item.get("type", "message") for item in sent] == [
        "message", "reasoning", "function_call", "function_call_output"
    ]  # fmt: skip
