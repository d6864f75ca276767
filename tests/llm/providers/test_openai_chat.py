import json

import pytest

from llm.engine.chat import ChatRequest, Message, ToolCall, ToolSpec
from llm.engine.providers.openai_chat import split_reasoning
from tests.fakes.llm_server import FakeToolCall, answer

LOOKUP = ToolSpec(
    name="list_medications",
    description="List the patient's medications.",
    parameters={"type": "object", "properties": {"status": {"type": "string"}}},
)


def conversation_with_tool_round(model):
    return ChatRequest(
        model=model,
        purpose="assistant",
        system="You help patients.",
        messages=(
            Message(role="user", content="Which pills do I take?"),
            Message(
                role="assistant",
                content="Let me look.",
                tool_calls=(ToolCall("call_1", "list_medications", '{"status": "active"}'),),
            ),
            Message(
                role="tool",
                content='{"medications": ["Metformin"]}',
                tool_call_id="call_1",
                tool_name="list_medications",
            ),
        ),
        tools=(LOOKUP,),
        temperature=0.2,
        max_tokens=300,
    )


def test_it_renders_system_tools_and_tool_results_in_openai_format(make_client, llm_server):
    make_client("openai/gpt-4.1").chat(conversation_with_tool_round("openai/gpt-4.1"))

    body = llm_server.requests[0].body
    assert llm_server.requests[0].path == "/v1/chat/completions"
    assert body["model"] == "gpt-4.1"
    assert body["messages"][0] == {"role": "system", "content": "You help patients."}
    assert body["messages"][2]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "list_medications", "arguments": '{"status": "active"}'},
        }
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"medications": ["Metformin"]}',
    }
    assert body["tools"] == [LOOKUP.to_openai()]
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 300


def test_it_sends_max_tokens_to_openai_compatible_servers(make_client, llm_server):
    make_client("openai-compatible/llama-3").chat(
        conversation_with_tool_round("openai-compatible/llama-3")
    )

    body = llm_server.requests[0].body
    assert body["model"] == "llama-3"
    assert body["max_tokens"] == 300
    assert "max_completion_tokens" not in body


def test_it_parses_several_tool_calls_in_one_turn(make_client, llm_server, user_request):
    llm_server.script(
        answer(
            tool_calls=(
                FakeToolCall("c1", "list_medications", '{"status": "active"}'),
                FakeToolCall("c2", "get_profile", "{}"),
            )
        )
    )

    response = make_client("openai/gpt-5.5").chat(user_request("openai/gpt-5.5"))

    assert response.tool_calls == (
        ToolCall("c1", "list_medications", '{"status": "active"}'),
        ToolCall("c2", "get_profile", "{}"),
    )
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)


def test_it_passes_malformed_tool_arguments_through_as_raw_text(
    make_client, llm_server, user_request
):
    llm_server.script(answer(tool_calls=(FakeToolCall("c1", "cancel_appointment", '{"id": 4'),)))

    response = make_client("openai/gpt-5.5").chat(user_request("openai/gpt-5.5"))

    assert response.tool_calls[0].arguments == '{"id": 4'


def test_it_reports_a_truncated_answer(make_client, llm_server, user_request):
    llm_server.script(answer("The clinic opens at", truncated=True))

    response = make_client("openai/gpt-5.5").chat(user_request("openai/gpt-5.5"))

    assert response.finish_reason == "length"
    assert response.text == "The clinic opens at"


def test_it_moves_reasoning_content_out_of_the_visible_text(make_client, llm_server, user_request):
    llm_server.script(answer("Your refill is on its way.", reasoning="Check refills first."))

    response = make_client("openai-compatible/qwen").chat(user_request("openai-compatible/qwen"))

    assert response.text == "Your refill is on its way."
    assert response.reasoning == "Check refills first."


def test_it_strips_think_tags_from_the_visible_text(make_client, llm_server, user_request):
    llm_server.script(answer("<think>The patient sounds worried.</think>\nI can help with that."))

    response = make_client("openai-compatible/qwen").chat(user_request("openai-compatible/qwen"))

    assert response.text == "I can help with that."
    assert response.reasoning == "The patient sounds worried."


@pytest.mark.parametrize(
    ("content", "visible", "reasoning"),
    [
        ("Plain answer.", "Plain answer.", ""),
        ("<think>a</think>One<think>b</think> two", "One two", "a\n\nb"),
        ("opened in the prompt</think>Answer", "Answer", "opened in the prompt"),
        ("Answer <think>cut off mid thou", "Answer", "cut off mid thou"),
    ],
)
def test_it_splits_every_shape_of_inline_thinking(content, visible, reasoning):
    assert split_reasoning(content) == (visible, reasoning)


def test_it_keeps_unicode_arguments_intact(make_client, llm_server, user_request):
    arguments = json.dumps({"reason": "douleur à la poitrine"}, ensure_ascii=False)
    llm_server.script(answer(tool_calls=(FakeToolCall("c1", "message_pcp", arguments),)))

    response = make_client("openai/gpt-5.5").chat(user_request("openai/gpt-5.5"))

    assert json.loads(response.tool_calls[0].arguments) == {"reason": "douleur à la poitrine"}


def test_the_request_goes_out_as_the_sdk_would_send_it_without_its_per_call_transform(
    make_client, llm_server, monkeypatch
):
    """The SDK's chat.completions.create walks the whole history and tool list through its
    type-driven transform on every call; the adapter posts the body it built instead, and the
    server must receive exactly what create() would have sent."""
    import openai.resources.chat.completions.completions as completions

    request = conversation_with_tool_round("openai/gpt-4.1")
    client = make_client("openai/gpt-4.1")
    provider = client._provider
    provider._client.chat.completions.create(**provider.render(request))
    sent_by_create = llm_server.requests[0]

    def no_transform(*args, **kwargs):
        raise AssertionError("the SDK's request transform ran")

    monkeypatch.setattr(completions, "maybe_transform", no_transform)
    client.chat(request)

    sent = llm_server.requests[1]
    assert (sent.path, sent.body) == (sent_by_create.path, sent_by_create.body)
    headers = [
        {name.lower(): value for name, value in r.headers.items()} for r in (sent, sent_by_create)
    ]
    assert headers[0]["authorization"] == headers[1]["authorization"] == "Bearer test-openai-key"


def test_the_body_is_encoded_byte_for_byte_as_the_sdk_encodes_the_rendered_request():
    """The adapter writes each tool's JSON once and posts the body encoded; the bytes must be
    those the SDK's own encoder makes of render()'s dict, call after call."""
    from dataclasses import replace

    from openai._utils._json import openapi_dumps

    from benchmark.engine.sandbox import tool_specs
    from llm.engine.providers.openai_chat import OpenAIChatProvider

    provider = OpenAIChatProvider(model_name="m", api_key="k", base_url="", timeout_seconds=5)
    with_tools = replace(
        conversation_with_tool_round("openai/m"),
        system="Vous aidez les patients   « tools- » ✓",
        tools=(LOOKUP, *tool_specs()),
        seed=7,
        json_schema={"type": "object"},
    )
    without_tools = replace(with_tools, tools=())
    for request in (with_tools, with_tools, without_tools):
        assert provider.encode(request) == openapi_dumps(provider.render(request))


def test_a_chat_reply_is_read_as_plain_json_with_missing_fields_as_none():
    from llm.engine.providers.openai_chat import JsonReply, OpenAIChatProvider, parse_completion

    provider = OpenAIChatProvider(model_name="m", api_key="k", base_url="", timeout_seconds=5)
    body = {"choices": [{"message": {"content": "<think>hmm</think>Hello"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}}  # fmt: skip
    reply = provider.read(json.dumps(body).encode())
    assert isinstance(reply, JsonReply) and reply.system_fingerprint is None
    response = parse_completion(reply, model="openai/m", latency_ms=1.0)
    assert (response.text, response.reasoning, response.finish_reason) == ("Hello", "hmm", "stop")
    assert (response.usage.input_tokens, response.usage.cached_input_tokens) == (12, 0)
    with pytest.raises(AttributeError):
        reply.__deepcopy__  # noqa: B018 - Python's own protocols must not read as a field
