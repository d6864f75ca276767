"""Conversations played elsewhere, as the platform imports them: the one shape every importer
(HealthBench JSONL in the rubric lab, OpenAI-format chats) turns its rows into before
`benchmark.services.imports.conversations_import` stores them.

A conversation is its messages in order - the patient's ("user"), the assistant's (text and
tool calls) and the tools' results ("tool") - with what is known of the case: a patient record
(often none), the scenario the judges read beside the trace, the source's tags, and the columns
of a case the source can fill (task category, condition, ...). Instructions the assistant was
given (a system message) are kept apart from the messages, since no event of a trace holds
them. A conversation exported by this site brings its trace instead (`events`, as the run's
JSONL export writes them), stored event for event so the export imports back to the same trace.
`model` / `label` say who wrote the replies (one agent of the imported run per model).
`case_key` names the case a conversation plays: conversations of one import that share it are
one case (one benchmark entry), so the replies of several models to the same case are paired in
reports; they must then agree on what the case is (`case_problems`).
Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROLES = ("user", "assistant", "tool")
EVENT_KINDS = (
    "patient_message",
    "assistant_message",
    "tool_call",
    "tool_result",
    "reasoning",
    "error",
)
# The fields of a trace event an import stores (TraceEvent.ENGINE_FIELDS), with their types.
EVENT_FIELDS = {
    "event_id": str,
    "turn": int,
    "kind": str,
    "content": str,
    "tool_name": str,
    "tool_call_id": str,
    "arguments": (dict, type(None)),
    "ok": (bool, type(None)),
    "model_role": str,
    "input_tokens": int,
    "output_tokens": int,
    "latency_ms": (int, float),
    "cost_usd": (int, float, str, type(None)),
    "cached": bool,
    "retries": int,
    "refused": bool,
}
MAX_EVENT_ID_CHARS = 16
# Columns of a case an importer may fill (BenchmarkEntry.SEED_COLUMNS); the rest stay blank.
CASE_COLUMNS = (
    "condition",
    "severity",
    "task_category",
    "task_subcategory",
    "age_group",
    "gender_identity",
    "care_preference",
    "personality",
)
MAX_KEY_CHARS = 200


@dataclass(frozen=True)
class ImportedToolCall:
    call_id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ImportedMessage:
    role: str  # "user" (the patient), "assistant" or "tool" (a tool's result)
    content: str
    tool_calls: tuple[ImportedToolCall, ...] = ()  # the assistant's
    tool_call_id: str = ""  # a tool result: the call it answers


@dataclass(frozen=True)
class ImportedConversation:
    """One conversation to import. `key` is the source's id for it (unique within one import;
    the imported run maps keys to the stored conversations)."""

    key: str
    messages: tuple[ImportedMessage, ...]
    instructions: str = ""  # what the assistant was told (system messages), if anything
    profile: Mapping[str, Any] = field(default_factory=dict)  # the patient record, if any
    tags: tuple[str, ...] = ()
    case: Mapping[str, str] = field(default_factory=dict)  # CASE_COLUMNS -> value
    story: str = ""  # ground truth the judges read beside the trace, if the source has one
    complexity: str = ""  # scenario complexity (regular, chronic, ...), if known
    model: str = ""  # the model (or person) that wrote the replies; "" for the import's own
    label: str = ""  # how reports name that agent ("" : the model)
    events: tuple[Mapping[str, Any], ...] = ()  # this site's own trace, instead of messages
    case_key: str = ""  # the case it plays, shared with other models' replies ("": its own)

    @property
    def assistant_turns(self) -> int:
        return sum(event["kind"] == "assistant_message" for event in trace_events(self))


def conversation_problems(conversation: ImportedConversation) -> list[str]:
    """Everything that keeps `conversation` from being stored (empty: it can be)."""
    problems = []
    if not conversation.key.strip() or len(conversation.key) > MAX_KEY_CHARS:
        problems.append(f"its id must be text of 1 to {MAX_KEY_CHARS} characters")
    if conversation.events:
        problems += _event_problems(conversation.events)
    else:
        problems += _message_problems(conversation.messages)
    if len(conversation.case_key) > MAX_KEY_CHARS:
        problems.append(f"its case id must be at most {MAX_KEY_CHARS} characters")
    unknown = sorted(set(conversation.case) - set(CASE_COLUMNS))
    if unknown:
        problems.append(f"unknown case columns: {', '.join(unknown)}")
    return problems


def _message_problems(messages: Sequence[ImportedMessage]) -> list[str]:
    if not messages:
        return ["it has no messages"]
    problems = (
        [] if messages[0].role == "user" else ["it must open with the patient's (user) message"]
    )
    calls: set[str] = set()
    for number, message in enumerate(messages, start=1):
        if message.role not in ROLES:
            problems.append(
                f"message {number} has role {message.role!r}, not user, assistant or tool"
            )
        if not message.content.strip() and not message.tool_calls:
            problems.append(f"message {number} is empty")
        for call in message.tool_calls:
            if not call.call_id or not call.name:
                problems.append(f"message {number}: a tool call needs an id and a function name")
            calls.add(call.call_id)
        if message.role == "tool" and message.tool_call_id not in calls:
            problems.append(
                f"message {number} is a tool result for {message.tool_call_id or 'no call'!r}, "
                "which no earlier assistant message called"
            )
    return problems


def _event_problems(events: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    ids = [event.get("event_id") for event in events]
    if events[0].get("kind") != "patient_message":
        problems.append("its trace must open with the patient's message")
    for number, event in enumerate(events, start=1):
        if event.get("kind") not in EVENT_KINDS:
            problems.append(
                f"event {number} has kind {event.get('kind')!r}, not one of "
                f"{', '.join(EVENT_KINDS)}"
            )
        for name, kinds in EVENT_FIELDS.items():
            if name in event and not isinstance(event[name], kinds):
                problems.append(f"event {number}: {name} has the wrong type")
        event_id = event.get("event_id")
        if not isinstance(event_id, str) or not 0 < len(event_id) <= MAX_EVENT_ID_CHARS:
            problems.append(
                f"event {number} needs an event_id of 1 to {MAX_EVENT_ID_CHARS} characters"
            )
        elif ids.count(event_id) > 1:
            problems.append(f"event {number}: the event_id {event_id!r} is used twice")
    return problems


def duplicate_keys(conversations: Sequence[ImportedConversation]) -> list[str]:
    seen: set[str] = set()
    duplicates = []
    for conversation in conversations:
        if conversation.key in seen:
            duplicates.append(conversation.key)
        seen.add(conversation.key)
    return duplicates


# What a case is: conversations sharing a case key must agree on each of these.
CASE_FIELDS = {
    "instructions": "the assistant's instructions",
    "profile": "the patient record",
    "story": "the scenario",
    "complexity": "the scenario complexity",
    "case": "the case columns",
}


def case_problems(conversations: Sequence[ImportedConversation]) -> list[str]:
    """Conversations sharing a case key that describe different cases, each named."""
    first: dict[str, ImportedConversation] = {}
    problems = []
    for conversation in conversations:
        if not conversation.case_key:
            continue
        model = first.setdefault(conversation.case_key, conversation)
        differ = [
            words
            for name, words in CASE_FIELDS.items()
            if getattr(conversation, name) != getattr(model, name)
        ]
        if differ:
            problems.append(
                f"{conversation.key!r}: it plays case {conversation.case_key!r} like "
                f"{model.key!r} but differs from it on {', '.join(differ)}"
            )
    return problems


def trace_events(conversation: ImportedConversation) -> list[dict[str, Any]]:
    """The messages as trace events: ids e0001, e0002, ...; turn k holds the patient's k-th
    message and the replies to it (a reply before any patient message never happens: the
    conversation opens with the patient). An assistant message's tool calls follow its text,
    each a tool_call event; a tool message is the tool_result of its call. A trace given as
    `events` (this site's export) is kept as it is, in its order."""
    if conversation.events:
        return [
            {**{name: event[name] for name in EVENT_FIELDS if name in event}, "seq": seq}
            for seq, event in enumerate(conversation.events)
        ]
    events: list[dict[str, Any]] = []
    turn, previous, names = 0, "", {}

    def add(kind: str, content: str = "", **fields) -> None:
        seq = len(events) + 1
        events.append(
            {
                "event_id": f"e{seq:04d}",
                "seq": seq,
                "turn": turn,
                "kind": kind,
                "content": content,
                **fields,
            }
        )

    for message in conversation.messages:
        if message.role == "user":
            turn += previous != "user"
            add("patient_message", message.content)
        elif message.role == "assistant":
            if message.content.strip():
                add("assistant_message", message.content)
            for call in message.tool_calls:
                names[call.call_id] = call.name
                add(
                    "tool_call",
                    tool_name=call.name,
                    tool_call_id=call.call_id,
                    arguments=dict(call.arguments),
                )
        else:
            add(
                "tool_result",
                message.content,
                tool_call_id=message.tool_call_id,
                tool_name=names.get(message.tool_call_id, ""),
            )
        previous = message.role
    return events
