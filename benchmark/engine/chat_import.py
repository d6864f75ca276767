"""Your own conversations as JSON Lines, one conversation per line, read into the shape every
importer stores (`benchmark.engine.imports.ImportedConversation`), with every problem of every
line named (its line number and id), so nothing is stored from a file with any.

A line is either

- **OpenAI chat format**: `messages` (`system` - the assistant's instructions -, `user` - the
  patient -, `assistant` with its text and `tool_calls`, `tool` with `tool_call_id` and the
  tool's result), and optionally `id`, `model` (who wrote the replies; one agent per model in
  the imported run), `patient_record` (the patient's record, an object), `scenario` (what the
  judges read beside the trace: text), `scenario_complexity`, `tags`, `case` (case columns),
  `case_id` (the case it plays: lines sharing one are one case, so several models' replies
  to it are paired);
- or **a line of this site's run export** (`conversation_id`, `agent`, `case`, `events`): the
  trace is kept event for event, so an exported run imports back to the same traces, the
  conversations of one case (`case.entry_index`) still one case.

Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchmark.engine.imports import (
    CASE_COLUMNS,
    ImportedConversation,
    ImportedMessage,
    ImportedToolCall,
    conversation_problems,
)
from common import json_text


class LineProblem(ValueError):
    """What is wrong with a line, in words."""


def read_jsonl(text: str) -> tuple[list[ImportedConversation], list[str]]:
    """Every conversation of the file, and every problem (each naming its line)."""
    conversations, problems, keys = [], [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            conversation = _conversation(json_text.loads(line), number)
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not JSON ({error.msg}, column {error.colno})")
            continue
        except LineProblem as problem:
            problems.append(f"line {number}: {problem}")
            continue
        where = f"line {number} ({conversation.key})"
        problems += [f"{where}: {problem}" for problem in conversation_problems(conversation)]
        if conversation.key in keys:
            problems.append(f"{where}: the id is used on line {keys[conversation.key]} too")
        keys.setdefault(conversation.key, number)
        conversations.append(conversation)
    if not conversations and not problems:
        problems.append("the file holds no conversation")
    return conversations, problems


def _conversation(row: Any, number: int) -> ImportedConversation:
    if not isinstance(row, dict):
        raise LineProblem("expected a JSON object")
    if "events" in row:
        return _exported(row, number)
    if "messages" in row:
        return _openai(row, number)
    raise LineProblem(
        "it has neither messages (OpenAI chat format) nor events (this site's run export)"
    )


def _openai(row: dict, number: int) -> ImportedConversation:
    raw = row["messages"]
    if not isinstance(raw, list):
        raise LineProblem("messages must be a list")
    messages, instructions = [], []
    for position, message in enumerate(raw, start=1):
        if not isinstance(message, dict):
            raise LineProblem(f"message {position} is not an object")
        role = message.get("role")
        content = _text(message.get("content"), f"message {position}")
        if role == "system":
            instructions.append(content)
            continue
        calls = tuple(_tool_call(call, position) for call in message.get("tool_calls") or [])
        messages.append(
            ImportedMessage(
                str(role),
                content,
                tool_calls=calls,
                tool_call_id=str(message.get("tool_call_id") or ""),
            )
        )
    model = _optional_text(row, "model")
    return ImportedConversation(
        key=str(row.get("id") or f"line-{number}"),
        messages=tuple(messages),
        instructions="\n\n".join(instructions),
        profile=_mapping(row, "patient_record"),
        tags=tuple(str(tag) for tag in _list(row, "tags")),
        case={str(k): str(v) for k, v in _mapping(row, "case").items()},
        story=_optional_text(row, "scenario"),
        complexity=_optional_text(row, "scenario_complexity"),
        model=model,
        label=model,
        case_key=_identifier(row, "case_id"),
    )


def _exported(row: dict, number: int) -> ImportedConversation:
    events = row["events"]
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise LineProblem("events must be a list of objects")
    agent, case = _mapping(row, "agent"), _mapping(row, "case")
    seed = case.get("seed") if isinstance(case.get("seed"), dict) else {}
    return ImportedConversation(
        key=str(row.get("conversation_id") or f"line-{number}"),
        messages=(),
        events=tuple(events),
        profile=case.get("profile") if isinstance(case.get("profile"), dict) else {},
        case={column: str(seed[column]) for column in CASE_COLUMNS if seed.get(column)},
        story=str(case.get("story") or ""),
        complexity=str(case.get("complexity") or ""),
        model=str(agent.get("model") or ""),
        label=str(agent.get("label") or agent.get("model") or ""),
        case_key="" if case.get("entry_index") is None else f"entry {case['entry_index']}",
    )


def _tool_call(call: Any, position: int) -> ImportedToolCall:
    where = f"message {position}: a tool call"
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise LineProblem(f"{where} must be an object with a function")
    function = call["function"]
    arguments = function.get("arguments") or "{}"
    if isinstance(arguments, str):
        try:
            arguments = json_text.loads(arguments)
        except json.JSONDecodeError as error:
            raise LineProblem(
                f"{where}'s arguments are not JSON ({error.msg}): {arguments[:80]!r}"
            ) from None
    if not isinstance(arguments, dict):
        raise LineProblem(f"{where}'s arguments must be a JSON object")
    return ImportedToolCall(str(call.get("id") or ""), str(function.get("name") or ""), arguments)


def _text(content: Any, where: str) -> str:
    """Message content: text, or a list of parts whose text parts are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise LineProblem(f"{where}: content must be text or a list of parts")


def _optional_text(row: dict, name: str) -> str:
    value = row.get(name)
    if value is not None and not isinstance(value, str):
        raise LineProblem(f"{name} must be text")
    return value or ""


def _identifier(row: dict, name: str) -> str:
    value = row.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise LineProblem(f"{name} must be text or a whole number")
    return "" if value is None else str(value).strip()


def _mapping(row: dict, name: str) -> Mapping:
    value = row.get(name)
    if value is not None and not isinstance(value, dict):
        raise LineProblem(f"{name} must be an object")
    return value or {}


def _list(row: dict, name: str) -> list:
    value = row.get(name)
    if value is not None and not isinstance(value, list):
        raise LineProblem(f"{name} must be a list")
    return value or []
