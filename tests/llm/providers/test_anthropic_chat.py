from llm.engine.chat import ChatRequest, Message, ToolCall, ToolSpec
from tests.fakes.llm_server import FakeToolCall, answer

MODEL = "anthropic/claude-opus-4-8"

SCHEDULE = ToolSpec(
    name="schedule_appointment",
    description="Book an appointment.",
    parameters={"type": "object", "properties": {"reason": {"type": "string"}}},
)


def test_it_renders_tool_use_and_merges_tool_results_into_one_user_turn(make_client, llm_server):
    request = ChatRequest(
        model=MODEL,
        purpose="assistant",
        system="You help patients.",
        messages=(
            Message(role="user", content="Book me in and check my profile."),
            Message(
                role="assistant",
                content="",
                tool_calls=(
                    ToolCall("tu_1", "schedule_appointment", '{"reason": "cough"}'),
                    ToolCall("tu_2", "get_profile", "{}"),
                ),
            ),
            Message(role="tool", content='{"ok": true}', tool_call_id="tu_1"),
            Message(role="tool", content='{"name": "Maria"}', tool_call_id="tu_2"),
        ),
        tools=(SCHEDULE,),
    )

    make_client(MODEL).chat(request)

    body = llm_server.requests[0].body
    assert llm_server.requests[0].path == "/v1/messages"
    assert body["model"] == "claude-opus-4-8"
    # The stable prefix carries the prompt-cache breakpoints.
    ephemeral = {"cache_control": {"type": "ephemeral"}}
    assert body["system"] == [{"type": "text", "text": "You help patients.", **ephemeral}]
    assert body["tools"] == [SCHEDULE.to_anthropic() | ephemeral]
    assert body["max_tokens"] == 4096
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "tu_1",
            "name": "schedule_appointment",
            "input": {"reason": "cough"},
        },
        {"type": "tool_use", "id": "tu_2", "name": "get_profile", "input": {}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": '{"ok": true}'},
        {"type": "tool_result", "tool_use_id": "tu_2", "content": '{"name": "Maria"}'},
    ]


def test_it_replays_malformed_arguments_as_raw_text_inside_an_object(make_client, llm_server):
    request = ChatRequest(
        model=MODEL,
        purpose="assistant",
        system="",
        messages=(
            Message(role="user", content="Cancel it."),
            Message(role="assistant", tool_calls=(ToolCall("tu_1", "cancel_appointment", "{"),)),
            Message(role="tool", content='{"error": "invalid JSON"}', tool_call_id="tu_1"),
        ),
    )

    make_client(MODEL).chat(request)

    body = llm_server.requests[0].body
    assert "system" not in body
    assert body["messages"][1]["content"][0]["input"] == {"raw_arguments": "{"}


def test_it_parses_several_tool_calls_and_keeps_thinking_apart(
    make_client, llm_server, user_request
):
    llm_server.script(
        answer(
            "I'll check two things.",
            reasoning="Profile first, then slots.",
            tool_calls=(
                FakeToolCall("tu_1", "get_profile", "{}"),
                FakeToolCall("tu_2", "list_doctors", '{"specialty": "cardiology"}'),
            ),
        )
    )

    response = make_client(MODEL).chat(user_request(MODEL))

    assert response.text == "I'll check two things."
    assert response.reasoning == "Profile first, then slots."
    assert response.tool_calls == (
        ToolCall("tu_1", "get_profile", "{}"),
        ToolCall("tu_2", "list_doctors", '{"specialty": "cardiology"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.model == MODEL


def test_it_reports_max_tokens_as_a_truncated_answer(make_client, llm_server, user_request):
    llm_server.script(answer("Your next", truncated=True))

    response = make_client(MODEL).chat(user_request(MODEL, max_tokens=5))

    assert response.finish_reason == "length"
    assert llm_server.requests[0].body["max_tokens"] == 5
