"""Fakes for the conversation loop tests: scripted chat clients and a tiny sandbox."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from llm.engine.chat import ChatRequest, ChatResponse, ToolCall, ToolSpec, Usage

SEED = {
    "condition": "Type 2 diabetes with chronic kidney disease",
    "severity": "moderate",
    "task_category": "provider",
    "task_subcategory": "scheduling",
    "age_group": "senior",
    "sex": "female",
    "gender": "woman",
    "care_preference": "remote",
    "personality": "cooperative",
}


class ScriptedClient:
    """Answers from a function of (request, call number); keeps every request it saw."""

    def __init__(self, answer: Callable[[ChatRequest, int], ChatResponse]):
        self.answer = answer
        self.requests: list[ChatRequest] = []

    def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return self.answer(request, len(self.requests))


def says(
    text: str, *, cost: Decimal | None = Decimal("0.001"), reasoning: str = ""
) -> ChatResponse:
    return ChatResponse(
        text=text,
        reasoning=reasoning,
        usage=Usage(input_tokens=10, output_tokens=len(text) // 4),
        latency_ms=5.0,
        cost_usd=cost,
    )


def calls(*tool_calls: tuple[str, str], text: str = "") -> ChatResponse:
    """A response with tool calls given as (name, raw JSON arguments)."""
    return ChatResponse(
        text=text,
        tool_calls=tuple(
            ToolCall(id=f"call-{index}", name=name, arguments=arguments)
            for index, (name, arguments) in enumerate(tool_calls)
        ),
        usage=Usage(input_tokens=10, output_tokens=3),
        cost_usd=Decimal("0.001"),
    )


@dataclass(frozen=True)
class FakeResult:
    ok: bool
    content: str
    write_action: dict | None = None


class FakeSandbox:
    """Two tools, `echo` and `book`; errors for unknown names and malformed arguments."""

    def __init__(self):
        self.write_actions: list[dict] = []
        self.calls: list[tuple[str, object]] = []

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        if name not in ("echo", "book"):
            return FakeResult(False, json.dumps({"error": f"There is no tool named {name!r}."}))
        if not isinstance(arguments, dict):
            return FakeResult(False, json.dumps({"error": "Arguments must be a JSON object."}))
        if name == "book":
            action = {"tool": "book", "action": "booked", **arguments}
            self.write_actions.append(action)
            return FakeResult(True, json.dumps({"booked": arguments}), action)
        return FakeResult(True, json.dumps({"echo": arguments}))


FAKE_TOOLS = (
    ToolSpec("echo", "Echo the arguments.", {"type": "object", "properties": {}}),
    ToolSpec("book", "Book something.", {"type": "object", "properties": {}}),
)


def play(case, agent, now, *, patient, assistant, sandbox=None, tools=FAKE_TOOLS, **options):
    """run_conversation with test model names, the fake sandbox and its two tools."""
    from benchmark.engine.agents.loop import run_conversation

    return run_conversation(
        case=case,
        sandbox=sandbox if sandbox is not None else FakeSandbox(),
        patient_client=patient,
        assistant_client=assistant,
        patient_model="test/patient",
        assistant_model="test/assistant",
        agent=agent,
        now=now,
        tools=tools,
        **options,
    )
