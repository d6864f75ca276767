"""HealthBench-format JSONL read row by row into conversations and physician criteria.

One JSON object per line:

    {"prompt_id": "...",
     "prompt": [{"role": "user", "content": "..."}, {"role": "assistant", ...}, ...],
     "completion": "the reply to score" (optional; or {"role": "assistant", "content": ...},
                   or a list holding that one message),
     "ideal_completions_data": {"ideal_completion": "a physician's reply", ...} (optional, or
                   null),
     "rubrics": [{"criterion": "...", "points": 5, "tags": ["axis:accuracy", "level:example"]}],
     "example_tags": ["theme:emergency_referrals", ...]}

Single-turn rows hold one user message, multi-turn rows the whole exchange so far; the prompt
ends with the patient's message, which the reply answers. The reply is the row's `completion`
when it has one, else the physicians' ideal completion (HealthBench's own files give no
completion, and an ideal completion for part of their rows); a row with neither is imported
with no reply. Which reply a conversation holds is its agent: `RESPONDER` for a completion,
`IDEAL_RESPONDER` for an ideal completion. System or developer messages may open the prompt:
they are the assistant's instructions, kept apart. Other keys (HealthBench files carry a few
more, such as the reference completions physicians were shown) are ignored.

Every line is checked and every problem reported with its line number, so a file is fixed in
one pass; blank lines are skipped. Points are HealthBench's clinical weights: integers in
[-10, 10], never 0 (negative = a behaviour to penalise). Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.engine.imports import ImportedConversation, ImportedMessage
from common import json_text

SOURCE_LABEL = "HealthBench JSONL"
RESPONDER = "imported/healthbench"
IDEAL_RESPONDER = "imported/healthbench-ideal"
IDEAL_LABEL = "physicians' ideal completion (HealthBench)"
# Which reply a row's conversation ends with.
COMPLETION, IDEAL_COMPLETION = "completion", "ideal_completion"
INSTRUCTION_ROLES = ("system", "developer")
MESSAGE_ROLES = ("user", "assistant")
MIN_POINTS, MAX_POINTS = -10, 10
MAX_CRITERION_CHARS = 2000
MAX_ID_CHARS = 200
# The source's evaluation subset: dialogues whose physician rubric has 8 to 10 criteria across
# at least three axes.
SUBSET_CRITERIA = (8, 10)
SUBSET_AXES = 3


@dataclass(frozen=True)
class Criterion:
    """One physician criterion as the file gives it."""

    text: str
    points: int
    axis: str  # the axis: tag's value ("" when the criterion has none)
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    line: int
    conversation: ImportedConversation
    criteria: tuple[Criterion, ...]
    reply: str  # COMPLETION, IDEAL_COMPLETION or "" (no reply to score)

    @property
    def has_completion(self) -> bool:
        return bool(self.reply)

    @property
    def prompt_id(self) -> str:
        return self.conversation.key

    @property
    def axes(self) -> set[str]:
        return {criterion.axis for criterion in self.criteria if criterion.axis}


def parse(text: str) -> tuple[list[Row], list[str]]:
    """The rows of a file and its problems ("line 3: ..."), in line order. Rows with a problem
    are left out; a caller that saves nothing unless the file is clean checks the problems."""
    rows, problems, first_line = [], [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row, row_problems = parse_line(line, number)
        if row is not None and row.prompt_id in first_line:
            row_problems.append(
                f"prompt_id {row.prompt_id!r} was already used on line {first_line[row.prompt_id]}"
            )
        problems += [f"line {number}: {problem}" for problem in row_problems]
        if row is not None and not row_problems:
            rows.append(row)
        if row is not None:
            first_line.setdefault(row.prompt_id, number)
    if not rows and not problems:
        problems.append("the file holds no rows")
    return rows, problems


def parse_line(line: str, number: int) -> tuple[Row | None, list[str]]:
    try:
        data = json_text.loads(line)
    except json.JSONDecodeError as error:
        return None, [f"not valid JSON ({error.msg}, column {error.colno})"]
    if not isinstance(data, dict):
        return None, ["the line must hold one JSON object"]
    problems: list[str] = []
    key = _prompt_id(data.get("prompt_id"), problems)
    instructions, messages = _prompt(data.get("prompt"), problems)
    completion, reply = _reply(data, problems)
    if completion and messages and messages[-1].role != "user":
        problems.append(
            "a completion answers the patient's last message: the prompt must end "
            "with a user message"
        )
    criteria = _criteria(data.get("rubrics"), problems)
    tags = _tags(data.get("example_tags", []), "example_tags", problems)
    if key is None:
        return None, problems
    writer = {"model": IDEAL_RESPONDER, "label": IDEAL_LABEL} if reply == IDEAL_COMPLETION else {}
    conversation = ImportedConversation(
        key=key,
        messages=(*messages, *([ImportedMessage("assistant", completion)] if completion else [])),
        instructions=instructions,
        tags=tuple(tags),
        case=_case(tags),
        **writer,
    )
    return Row(number, conversation, tuple(criteria), reply), problems


def source_subset(rows: Sequence[Row]) -> list[Row]:
    """The rows the source evaluated on: 8 to 10 physician criteria across three or more axes."""
    least, most = SUBSET_CRITERIA
    return [r for r in rows if least <= len(r.criteria) <= most and len(r.axes) >= SUBSET_AXES]


def _prompt_id(value: Any, problems: list[str]) -> str | None:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        problems.append(f"prompt_id must be text of 1 to {MAX_ID_CHARS} characters")
        return None
    return value.strip()


def _prompt(value: Any, problems: list[str]) -> tuple[str, list[ImportedMessage]]:
    if not isinstance(value, list) or not value:
        problems.append("prompt must be a non-empty list of messages {role, content}")
        return "", []
    instructions, messages = [], []
    for number, item in enumerate(value, start=1):
        role, content = _message(item, f"prompt message {number}", problems)
        if role in INSTRUCTION_ROLES:
            if messages:
                problems.append(f"prompt message {number}: a {role} message must come first")
            instructions.append(content)
        elif role in MESSAGE_ROLES:
            messages.append(ImportedMessage(role, content))
    if not messages:
        problems.append("prompt holds no user message")
    elif messages[0].role != "user":
        problems.append("the conversation must open with the patient's (user) message")
    return "\n\n".join(instructions), messages


def _message(item: Any, label: str, problems: list[str]) -> tuple[str, str]:
    if not isinstance(item, dict):
        problems.append(f"{label} must be an object {{role, content}}")
        return "", ""
    role, content = item.get("role"), item.get("content")
    if role not in (*INSTRUCTION_ROLES, *MESSAGE_ROLES):
        problems.append(f"{label} has role {role!r}; use system, user or assistant")
    if not isinstance(content, str) or not content.strip():
        problems.append(f"{label} content must be non-empty text")
        return "", ""
    return role, content


def _reply(data: dict, problems: list[str]) -> tuple[str, str]:
    """The reply to score and which one it is: the row's completion, else the physicians'
    ideal completion, else none ("", "")."""
    if data.get("completion") is not None:
        completion = _completion(data["completion"], problems)
        return completion, COMPLETION if completion else ""
    ideal = _ideal(data.get("ideal_completions_data"), problems)
    return ideal, IDEAL_COMPLETION if ideal else ""


def _completion(value: Any, problems: list[str]) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict):
        if value.get("role", "assistant") != "assistant":
            problems.append("completion must be the assistant's message")
            return ""
        value = value.get("content")
    if not isinstance(value, str) or not value.strip():
        problems.append("completion must be non-empty text or one assistant message")
        return ""
    return value


def _ideal(value: Any, problems: list[str]) -> str:
    """The physicians' ideal completion of `ideal_completions_data` ("" when it is null)."""
    if value is None:
        return ""
    text = value.get("ideal_completion") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.strip():
        problems.append(
            "ideal_completions_data must be null or an object whose "
            "ideal_completion is non-empty text"
        )
        return ""
    return text


def _criteria(value: Any, problems: list[str]) -> list[Criterion]:
    if not isinstance(value, list) or not value:
        problems.append("rubrics must be a non-empty list of {criterion, points, tags}")
        return []
    criteria = []
    for number, item in enumerate(value, start=1):
        label = f"rubric {number}"
        if not isinstance(item, dict):
            problems.append(f"{label} must be an object {{criterion, points, tags}}")
            continue
        before = len(problems)
        text = item.get("criterion")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_CRITERION_CHARS:
            problems.append(
                f"{label} criterion must be text of 1 to {MAX_CRITERION_CHARS} characters"
            )
        points = item.get("points")
        if isinstance(points, float) and points.is_integer():
            points = int(points)
        if (
            isinstance(points, bool)
            or not isinstance(points, int)
            or not MIN_POINTS <= points <= MAX_POINTS
            or points == 0
        ):
            problems.append(
                f"{label} points must be a non-zero integer from {MIN_POINTS} to "
                f"{MAX_POINTS}, not {points!r}"
            )
        tags = _tags(item.get("tags", []), f"{label} tags", problems)
        axes = [tag.split(":", 1)[1] for tag in tags if tag.startswith("axis:")]
        if len(axes) > 1:
            problems.append(f"{label} has {len(axes)} axis: tags; give at most one")
        if len(problems) == before:
            criteria.append(Criterion(text.strip(), points, axes[0] if axes else "", tuple(tags)))
    return criteria


def _tags(value: Any, label: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        problems.append(f"{label} must be a list of texts")
        return []
    return list(value)


def _case(tags: Sequence[str]) -> dict[str, str]:
    """The case columns the tags fill: HealthBench's theme becomes the task category."""
    themes = [tag.split(":", 1)[1] for tag in tags if tag.startswith("theme:")]
    return {"task_category": themes[0]} if themes else {}
