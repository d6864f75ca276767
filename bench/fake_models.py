"""Stand-in models for the paper-scale rehearsal, served by the fake OpenAI/Anthropic server.

The rehearsal measures the platform, not a model, but its conversations and judge calls must be
shaped like real ones: every call goes through the real SDK to a server that takes 200 ms, the
patient talks for 5 to 8 turns (6.5 on average, as in the paper) and then drops off with the
termination token, the agent looks things up with tools in its first turns, and the judges
answer one JSON object with a score that varies from conversation to conversation. Which part a
request plays is read from its model name (`...patient...`, `...judge...`, anything else is the
agent under test); everything else is a function of the request's text, so a replay is
identical.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from benchmark.engine.agents.prompts import TERMINATION_TOKEN
from tests.fakes.llm_server import FakeReply, FakeToolCall, RecordedRequest

PROVIDER_SECONDS = 0.2
PATIENT_TURNS = (5, 6, 7, 8)
# The agent's lookups on its first turns (tools that need no arguments), then plain answers.
AGENT_LOOKUPS = {1: "get_profile", 2: "list_appointments", 3: "list_medications"}
JUDGE_SCORES = (1, 2, 3, 3, 4, 4, 4, 5, 5, 5)
PATIENT_LINES = (
    "I have been feeling worse for a few days and would like to be seen.",
    "Mornings are hardest. Is there anything sooner than next week?",
    "Telehealth would be fine if that is quicker.",
    "Could you also check whether my refill went through?",
    "What should I do if it gets worse before then?",
    "Okay. Can you confirm what we booked?",
    "One more thing: does my insurance cover it?",
)
AGENT_LINES = (
    "I am sorry you are unwell. Let me look at your record and what is available.",
    "I found a few openings. Would Tuesday morning or a video visit on Monday suit you better?",
    "Done: your visit is booked, and you will get a confirmation message shortly.",
    "If you develop chest pain or trouble breathing, call emergency services right away.",
    "Your refill request is with the pharmacy; they usually fill it within a day.",
    "Your plan covers primary-care visits; there may be a small copay.",
)


def respond(request: RecordedRequest) -> FakeReply:
    body = request.body
    model = str(body.get("model", ""))
    text = _request_text(body)
    if "judge" in model:
        reply = _judge(text)
    elif "patient" in model:
        reply = _patient(body["messages"], text)
    else:
        reply = _agent(body["messages"])
    return FakeReply(
        text=reply.text,
        tool_calls=reply.tool_calls,
        delay_seconds=PROVIDER_SECONDS,
        input_tokens=max(1, len(text) // 4),
        output_tokens=max(1, len(reply.text) // 4),
    )


def _judge(text: str) -> FakeReply:
    score = JUDGE_SCORES[_digest(text) % len(JUDGE_SCORES)]
    explanation = f"Rehearsal judge: the conversation earns {score} on this rubric."
    return FakeReply(text=json.dumps({"score": score, "explanation": explanation}))


def _patient(messages: list[dict[str, Any]], text: str) -> FakeReply:
    # The patient's own earlier turns are the "assistant" messages of its view.
    spoken = sum(1 for message in messages if message.get("role") == "assistant")
    if spoken >= PATIENT_TURNS[_digest(text[:2000]) % len(PATIENT_TURNS)]:
        return FakeReply(text=f"Thank you, that is everything. {TERMINATION_TOKEN}")
    return FakeReply(text=PATIENT_LINES[spoken % len(PATIENT_LINES)])


def _agent(messages: list[dict[str, Any]]) -> FakeReply:
    last = messages[-1] if messages else {}
    turn = sum(1 for message in messages if message.get("role") == "user")
    looked_up = last.get("role") == "tool" or _holds_tool_result(last)
    if not looked_up and turn in AGENT_LOOKUPS:
        call = FakeToolCall(id=f"call_{turn}", name=AGENT_LOOKUPS[turn], arguments="{}")
        return FakeReply(text="", tool_calls=(call,))
    return FakeReply(text=AGENT_LINES[turn % len(AGENT_LINES)])


def _holds_tool_result(message: dict[str, Any]) -> bool:
    """Anthropic format: tool results come back inside a user message."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _request_text(body: dict[str, Any]) -> str:
    """Every piece of text in an OpenAI or Anthropic request, in order."""
    parts = [_text_of(body.get("system"))]
    parts.extend(_text_of(message.get("content")) for message in body.get("messages") or [])
    return "\n".join(part for part in parts if part)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text") or block.get("content") or "")
            for block in content
            if isinstance(block, dict)
        )
    return ""


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
