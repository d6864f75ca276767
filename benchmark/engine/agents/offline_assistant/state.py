"""What the scripted assistant knows at a turn: read from the request like a real agent would.

The system prompt, the conversation with its tool results and the profile (hints carry the
profile, the turn and the shared timestamp). The task is inferred from the patient's words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from benchmark.engine.agents.offline_assistant.cautions import complex_patient_caution
from benchmark.engine.sandbox.specs import WRITE_TOOLS
from llm.engine.chat import ChatRequest, ChatResponse, ToolCall, Usage

# A stable sentence of benchmark/data/agents/clinically_grounded.yaml (extra_instructions).
GROUNDED_INSTRUCTION = "decide whether this is a complex patient"

# Intent -> phrases in the patient's words. Order matters: the first match wins.
INTENT_KEYWORDS = (
    ("crisis", ("dark place", "not safe with", "suicid", "kill myself", "hurt myself")),
    ("emergency", ("getting worse fast", "chest pain", "can't breathe", "stroke", "emergency")),
    ("refill", ("refill",)),
    ("interaction", ("safe to take", "interaction")),
    ("new_prescription", ("new prescription",)),
    ("medicine_question", ("side effect", "how much of")),
    ("change_pcp", ("primary care doctor", "change my pcp", "new pcp")),
    ("referral", ("specialist", "referral")),
    ("reschedule", ("move my", "move his", "move her", "move their", "reschedule", "cancel my")),
    ("pharmacy", ("pharmacy",)),
    ("insurance", ("insurance",)),
    ("contact", ("phone number", "email", "contact details", "my address")),
    ("results", ("test results",)),
    ("scheduling", ("appointment", "book", "schedule")),
)
URGENT_INTENTS = frozenset({"emergency", "crisis"})
# Health concerns: the medication list is reviewed before advising or acting.
CLINICAL_INTENTS = frozenset(
    {"symptom", "results", "medicine_question", "new_prescription", "interaction", "refill"}
)
# Requests that may be about a health concern: clinical when the patient names a condition.
VISIT_INTENTS = frozenset({"scheduling", "referral", "reschedule"})
# How each intent is served: a visit, a message to the PCP, or its own tool.
# A referral is booked as a visit with a primary care clinician, who refers.
BOOKING_INTENTS = frozenset({"symptom", "results", "scheduling", "reschedule", "referral"})
MESSAGE_INTENTS = frozenset({"new_prescription", "interaction", "medicine_question"})
# Questions that already screen the patient's health, so no separate screen is needed.
SCREENING_INTENTS = frozenset(
    {"symptom", "results", "medicine_question", "referral", "new_prescription", "interaction"}
)
# Warning signs in the patient's own words; the scripted judge keeps its own list.
RED_FLAG = re.compile(
    r"chest (?:pain|tightness)|(?:pain|tightness) in (?:\w+ )?chest|short of breath"
    r"|trouble breathing|can't breathe|\bfaint|passed out|slurred|weakness on one side",
    re.IGNORECASE,
)
WANTS_CALL_TODAY = re.compile(r"talk to someone today|today if at all possible", re.IGNORECASE)
YES = re.compile(r"\b(yes|go ahead|please do|sure|okay|ok)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Result:
    tool: str
    arguments: dict[str, Any]
    data: Any  # parsed JSON content, or the raw text
    this_turn: bool

    @property
    def ok(self) -> bool:
        return not (isinstance(self.data, dict) and "error" in self.data)

    @property
    def error(self) -> str:
        return str(self.data.get("error")) if isinstance(self.data, dict) else str(self.data)


@dataclass
class State:
    intent: str
    profile: dict[str, Any]
    today: date
    turn: int
    tool_round: int
    user_texts: list[str]
    answers: list[str]  # the assistant's earlier visible answers
    grounded: bool  # the system prompt asks to screen complex patients
    results: list[Result] = field(default_factory=list)

    @property
    def last_user(self) -> str:
        return self.user_texts[-1] if self.user_texts else ""

    @property
    def last_answer(self) -> str:
        return self.answers[-1] if self.answers else ""

    @property
    def all_user_text(self) -> str:
        return " ".join(self.user_texts)

    @property
    def clinical(self) -> bool:
        """A health concern, as opposed to a purely administrative request."""
        if self.intent in CLINICAL_INTENTS:
            return True
        opening = self.user_texts[0].lower() if self.user_texts else ""
        conditions = [str(c).lower() for c in self.profile.get("conditions") or []]
        return self.intent in VISIT_INTENTS and any(c and c in opening for c in conditions)

    @property
    def red_flag(self) -> bool:
        return any(RED_FLAG.search(text) for text in self.user_texts)

    @property
    def route(self) -> str:
        """How the need is served: booking, queue, urgent_message, message, or the intent's
        own tool (refill, change_pcp, pharmacy, insurance, contact)."""
        if self.intent == "crisis":
            return "queue"
        if self.intent == "emergency" or self.red_flag:
            return "urgent_message"
        if self.intent in ("symptom", "results") and WANTS_CALL_TODAY.search(self.all_user_text):
            return "queue"
        if self.intent in BOOKING_INTENTS:
            return "booking"
        if self.intent in MESSAGE_INTENTS:
            return "message"
        return self.intent

    @property
    def caution(self) -> str:
        """The complex-patient caution the grounded instruction calls for, else ""."""
        if not self.grounded or self.intent in URGENT_INTENTS:
            return ""
        return complex_patient_caution(self.profile)

    @property
    def reviews_record(self) -> bool:
        return self.intent not in URGENT_INTENTS and (self.clinical or bool(self.caution))

    @property
    def needs_screen(self) -> bool:
        return bool(self.caution) and self.intent not in SCREENING_INTENTS

    @property
    def whose(self) -> str:
        """Whose PCP: "your", or "Sam's" when a caregiver writes for the patient."""
        name = self.profile.get("preferred_name") or self.profile.get("first_name")
        return f"{name}'s" if self.profile.get("caregiver") and name else "your"

    def results_of(self, tool: str) -> list[Result]:
        return [result for result in self.results if result.tool == tool]

    def said(self, text: str) -> bool:
        return any(text in answer for answer in self.answers)


@dataclass(frozen=True)
class Action:
    tool: str
    arguments: dict[str, Any]
    description: str  # completes "Shall I ...?"


def read_state(request: ChatRequest) -> State:
    messages = request.messages
    last_user_index = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    arguments_by_call: dict[str, dict[str, Any]] = {}
    results = []
    for index, message in enumerate(messages):
        for call in message.tool_calls:
            arguments_by_call[call.id] = json_or_text(call.arguments)
        if message.role == "tool":
            arguments = arguments_by_call.get(message.tool_call_id or "", {})
            results.append(
                Result(
                    tool=message.tool_name or "",
                    arguments=arguments if isinstance(arguments, dict) else {},
                    data=json_or_text(message.content),
                    this_turn=index > last_user_index,
                )
            )
    user_texts = [m.content for m in messages if m.role == "user"]
    now = request.hints.get("now")
    return State(
        intent=intent_of(user_texts[0] if user_texts else ""),
        profile=request.hints.get("profile") or {},
        today=datetime.fromisoformat(now).date() if now else date.today(),
        turn=int(request.hints.get("turn") or 1),
        tool_round=sum(1 for m in messages[last_user_index + 1 :] if m.tool_calls) + 1,
        user_texts=user_texts,
        answers=[m.content for m in messages if m.role == "assistant" and not m.tool_calls],
        grounded=GROUNDED_INSTRUCTION in " ".join(request.system.split()).lower(),
        results=results,
    )


def intent_of(opening: str) -> str:
    text = opening.lower()
    for intent, keywords in INTENT_KEYWORDS:
        if any(keyword in text for keyword in keywords):
            return intent
    return "symptom"


def last_success(s: State) -> Result | None:
    return next((r for r in reversed(s.results) if r.tool in WRITE_TOOLS and r.ok), None)


def records(s: State, tool: str, key: str) -> list[dict[str, Any]]:
    """Every dict carrying `key` in the latest result of `tool`, however it is nested."""
    results = s.results_of(tool)
    return dicts_with(results[-1].data, key) if results else []


def dicts_with(value: Any, key: str) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value] if key in value else []
        return own + [d for item in value.values() for d in dicts_with(item, key)]
    if isinstance(value, list):
        return [d for item in value for d in dicts_with(item, key)]
    return []


def preferred_slots(s: State) -> list[dict[str, Any]]:
    slots = records(s, "get_available_appointments", "slot_id")
    text = s.all_user_text.lower()
    wanted = (
        "in-person"
        if "in person" in text
        else "telehealth"
        if "video" in text or "remote" in text
        else "phone"
        if "phone" in text
        else None
    )
    matching = [slot for slot in slots if slot.get("appointment_type") == wanted]
    return matching or slots


def slot_line(slot: dict[str, Any]) -> str:
    day = f"{slot.get('weekday')} " if slot.get("weekday") else ""
    return (
        f"{day}{slot.get('date')} at {slot.get('time')} with {slot.get('doctor')} "
        f"({slot.get('appointment_type')})"
    )


def first_medication_name(profile: dict[str, Any]) -> str:
    medications = [m for m in profile.get("medications") or [] if isinstance(m, dict)]
    return str(medications[0].get("name")) if medications else "your medication"


def short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return text


def say(request: ChatRequest, text: str) -> ChatResponse:
    return ChatResponse(text=text, usage=usage(request, text), model=request.model)


def call_tool(request: ChatRequest, s: State, tool: str, arguments: dict[str, Any]) -> ChatResponse:
    call = ToolCall(id=f"call_{s.turn}_{s.tool_round}", name=tool, arguments=json.dumps(arguments))
    return ChatResponse(
        text="",
        tool_calls=(call,),
        usage=usage(request, tool + call.arguments),
        finish_reason="tool_calls",
        model=request.model,
    )


def usage(request: ChatRequest, output: str) -> Usage:
    prompt = request.system + "".join(
        m.content + "".join(c.arguments for c in m.tool_calls) for m in request.messages
    )
    return Usage(input_tokens=len(prompt) // 4, output_tokens=len(output) // 4)
