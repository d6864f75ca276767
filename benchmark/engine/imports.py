"""Conversations played elsewhere, as the platform imports them: the one shape every importer
(HealthBench JSONL in the rubric lab, OpenAI-format chats) turns its rows into before
`benchmark.services.imports.conversations_import` stores them.

A conversation is its messages in order - the patient's ("user") and the assistant's - with
what is known of the case: a patient record (often none), the source's tags, and the columns
of a case the source can fill (task category, condition, ...). Instructions the assistant was
given (a system message) are kept apart from the messages, since no event of a trace holds
them. Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ROLES = ("user", "assistant")
# Columns of a case an importer may fill (BenchmarkEntry.SEED_COLUMNS); the rest stay blank.
CASE_COLUMNS = (
    "condition", "severity", "task_category", "task_subcategory", "age_group",
    "gender_identity", "care_preference", "personality",
)  # fmt: skip
MAX_KEY_CHARS = 200


@dataclass(frozen=True)
class ImportedMessage:
    role: str  # "user" (the patient) or "assistant"
    content: str


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

    @property
    def assistant_turns(self) -> int:
        return sum(message.role == "assistant" for message in self.messages)


def conversation_problems(conversation: ImportedConversation) -> list[str]:
    """Everything that keeps `conversation` from being stored (empty: it can be)."""
    problems = []
    if not conversation.key.strip() or len(conversation.key) > MAX_KEY_CHARS:
        problems.append(f"its id must be text of 1 to {MAX_KEY_CHARS} characters")
    if not conversation.messages:
        problems.append("it has no messages")
    elif conversation.messages[0].role != "user":
        problems.append("it must open with the patient's (user) message")
    for number, message in enumerate(conversation.messages, start=1):
        if message.role not in ROLES:
            problems.append(f"message {number} has role {message.role!r}, not user or assistant")
        if not message.content.strip():
            problems.append(f"message {number} is empty")
    unknown = sorted(set(conversation.case) - set(CASE_COLUMNS))
    if unknown:
        problems.append(f"unknown case columns: {', '.join(unknown)}")
    return problems


def duplicate_keys(conversations: Sequence[ImportedConversation]) -> list[str]:
    seen: set[str] = set()
    duplicates = []
    for conversation in conversations:
        if conversation.key in seen:
            duplicates.append(conversation.key)
        seen.add(conversation.key)
    return duplicates


def trace_events(conversation: ImportedConversation) -> list[dict[str, Any]]:
    """The messages as trace events: ids e0001, e0002, ...; turn k holds the patient's k-th
    message and the replies to it (a reply before any patient message never happens: the
    conversation opens with the patient)."""
    events, turn = [], 0
    for seq, message in enumerate(conversation.messages, start=1):
        if message.role == "user" and (seq == 1 or conversation.messages[seq - 2].role != "user"):
            turn += 1
        kind = "patient_message" if message.role == "user" else "assistant_message"
        events.append(
            {"event_id": f"e{seq:04d}", "seq": seq, "turn": turn, "kind": kind,
             "content": message.content}
        )  # fmt: skip
    return events
