"""Judge prompt rendering from the one shared template, jury/data/prompts/judge.md.

The template holds a system part and a user part (split by HTML comment markers that a
Markdown viewer hides) with string.Template placeholders. Rendering takes the rubric, the
patient profile, the scenario and the trace, and nothing that could identify the model under
evaluation: there is no model argument, trace events are reduced to a fixed set of fields, and
reasoning blocks (internal to the agent) are left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from jury.engine.rubrics import Rubric

JUDGE_TEMPLATE_PATH = Path(__file__).resolve().parent.parent / "data" / "prompts" / "judge.md"

SYSTEM_MARKER = "<!-- system -->"
USER_MARKER = "<!-- user -->"
PLACEHOLDERS = frozenset(
    {
        "rubric_name",
        "rubric_code",
        "rubric_version",
        "task",
        "applicability",
        "levels",
        "sub_dimensions",
        "distinctions",
        "forced_fail",
        "profile",
        "scenario",
        "trace",
    }
)

_HIDDEN_KINDS = frozenset({"reasoning"})
_SHOWN_KINDS = frozenset(
    {"patient_message", "assistant_message", "tool_call", "tool_result", "error"}
)


class PromptTemplateError(ValueError):
    """The judge template text cannot be used (missing marker or unknown placeholder)."""


@dataclass(frozen=True)
class JudgeTemplate:
    system: Template
    user: Template


def normalise_template_text(text: str) -> str:
    """The template as the same text whatever sent it: line endings as LF (browsers post
    CRLF), no whitespace at the end of a line or of the text, one final newline."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def parse_judge_template(text: str) -> JudgeTemplate:
    if text.count(SYSTEM_MARKER) != 1 or text.count(USER_MARKER) != 1:
        raise PromptTemplateError(
            f"the judge template needs exactly one {SYSTEM_MARKER} and one {USER_MARKER} line"
        )
    before_user, user = text.split(USER_MARKER)
    system = before_user.split(SYSTEM_MARKER)[1]
    parts = JudgeTemplate(system=Template(system.strip()), user=Template(user.strip()))
    for part in (parts.system, parts.user):
        if not part.is_valid():
            raise PromptTemplateError("the judge template has a malformed $placeholder")
        unknown = set(part.get_identifiers()) - PLACEHOLDERS
        if unknown:
            raise PromptTemplateError(f"unknown placeholder(s): {', '.join(sorted(unknown))}")
    return parts


@lru_cache(maxsize=4)
def load_judge_template(path: Path | str = JUDGE_TEMPLATE_PATH) -> JudgeTemplate:
    return parse_judge_template(Path(path).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ConversationText:
    """The parts of a judge prompt that come from the conversation alone, rendered once and
    shared by every rubric and judge that scores it (a conversation has a dozen judge calls)."""

    profile: str
    scenario: str
    trace: str


def render_conversation(
    *,
    profile: Mapping[str, Any],
    scenario: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
) -> ConversationText:
    """`scenario` carries the story under "story" plus any other ground truth (task category
    and subcategory, seed attributes, complexity); everything except the story is JSON."""
    return ConversationText(
        profile=json.dumps(profile, indent=2, ensure_ascii=False),
        scenario=render_scenario(scenario),
        trace=render_trace(events),
    )


def render_judge_prompt(
    rubric: Rubric,
    *,
    profile: Mapping[str, Any],
    scenario: Mapping[str, Any],
    events: Iterable[Mapping[str, Any]],
    template: JudgeTemplate | None = None,
) -> tuple[str, str]:
    """Return (system, user) for one judge call on one rubric."""
    conversation = render_conversation(profile=profile, scenario=scenario, events=events)
    return render_judge_prompt_for(rubric, conversation=conversation, template=template)


def render_judge_prompt_for(
    rubric: Rubric, *, conversation: ConversationText, template: JudgeTemplate | None = None
) -> tuple[str, str]:
    """(system, user) for one rubric, from a conversation rendered by `render_conversation`."""
    if not rubric.judged:
        raise ValueError(f"rubric {rubric.id!r} is scored by clinicians only, not by judges")
    template = template or load_judge_template()
    values = {
        **_rubric_text(rubric),
        "profile": conversation.profile,
        "scenario": conversation.scenario,
        "trace": conversation.trace,
    }
    return template.system.substitute(values), template.user.substitute(values)


@lru_cache(maxsize=64)
def _rubric_text(rubric: Rubric) -> dict[str, str]:
    """The placeholders that come from the rubric alone (rubrics are frozen: rendered once)."""
    return {
        "rubric_name": rubric.name,
        "rubric_code": rubric.code,
        "rubric_version": str(rubric.version),
        "task": rubric.task,
        "applicability": (
            f"{rubric.applicability.rule} Score to give when the dimension had nothing to "
            f"exercise: {rubric.applicability.default_score}."
        ),
        "levels": render_levels(rubric),
        "sub_dimensions": render_sub_dimensions(rubric),
        "distinctions": _bullets(rubric.distinctions) or "None for this dimension.",
        "forced_fail": _bullets(rubric.forced_fail),
    }


# The placeholders that change from one conversation to the next: everything of the user part
# before the first of them is the same for every conversation scored on a rubric.
CONVERSATION_PLACEHOLDERS = ("profile", "scenario", "trace")


def stable_user_prefix(rubric: Rubric, template: JudgeTemplate | None = None) -> int:
    """How many characters at the start of the user part are the same for every conversation
    scored on `rubric` (the rubric's own text): the prefix a provider may cache across calls."""
    template = template or load_judge_template()
    return _stable_prefix(rubric, template)


@lru_cache(maxsize=64)
def _stable_prefix(rubric: Rubric, template: JudgeTemplate) -> int:
    raw = template.user.template
    start = _first_placeholder(raw, CONVERSATION_PLACEHOLDERS)
    head = raw if start is None else raw[:start]
    return len(Template(head).safe_substitute(_rubric_text(rubric)))


def _first_placeholder(raw: str, names: tuple[str, ...]) -> int | None:
    """Where the first of `names` ($name or ${name}) stands in the template text, if any."""
    starts = [
        position
        for name in names
        for form in (f"${name}", f"${{{name}}}")
        if (position := raw.find(form)) >= 0
    ]
    return min(starts) if starts else None


def case_user_prefix(
    rubric: Rubric, conversation: ConversationText, template: JudgeTemplate | None = None
) -> int:
    """How many characters at the start of the user part are the same for every conversation
    of one case scored on `rubric`: the rubric's text, then the patient's profile and the
    scenario, up to the trace (every agent that played the case shares them). 0 when the
    template has no trace."""
    template = template or load_judge_template()
    raw = template.user.template
    start = _first_placeholder(raw, ("trace",))
    if start is None:
        return 0
    values = {
        **_rubric_text(rubric),
        "profile": conversation.profile,
        "scenario": conversation.scenario,
    }
    return len(Template(raw[:start]).safe_substitute(values))


def prompt_hash(system: str, user: str) -> str:
    # JSON keeps the boundary between the two parts unambiguous.
    payload = json.dumps([system, user], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def render_levels(rubric: Rubric) -> str:
    return "\n".join(
        f"- {level.score} ({level.label}): {level.description}" for level in rubric.levels
    )


def render_sub_dimensions(rubric: Rubric) -> str:
    blocks = [
        f"### {index}. {sub.name}\n{_bullets(sub.criteria)}"
        for index, sub in enumerate(rubric.sub_dimensions, start=1)
    ]
    return "\n\n".join(blocks)


def render_scenario(scenario: Mapping[str, Any]) -> str:
    story = str(scenario.get("story") or "(no story recorded)")
    facts = {key: value for key, value in scenario.items() if key != "story"}
    facts_json = json.dumps(facts, indent=2, ensure_ascii=False, sort_keys=True)
    return f"Story: {story}\n\nScenario facts:\n```json\n{facts_json}\n```"


def render_trace(events: Iterable[Mapping[str, Any]]) -> str:
    lines = [_render_event(event) for event in events if event["kind"] not in _HIDDEN_KINDS]
    return "\n".join(lines) if lines else "(the conversation has no events)"


def _render_event(event: Mapping[str, Any]) -> str:
    kind = event["kind"]
    if kind not in _SHOWN_KINDS:
        raise ValueError(f"unknown trace event kind {kind!r}")
    head = f"#{event['event_id']} [turn {event.get('turn', '?')}]"
    if kind == "patient_message":
        # The loop stores a bare end-of-conversation token as an empty message.
        body = f"Patient: {event.get('content') or '(left the conversation)'}"
    elif kind == "assistant_message":
        body = f"Assistant: {event.get('content', '')}"
    elif kind == "tool_call":
        body = f"Tool call {event.get('tool_name')}: {_arguments_text(event.get('arguments'))}"
    elif kind == "tool_result":
        status = "ok" if event.get("ok") else "error"
        body = f"Tool result {event.get('tool_name')} ({status}): {event.get('content', '')}"
    else:
        # Provider error texts can name the model, so judges only learn that an error happened.
        body = "System: the conversation was interrupted by a technical error."
    return _indent_continuation(f"{head} {body}")


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments  # the raw text the model emitted, possibly malformed JSON
    return json.dumps(arguments, ensure_ascii=False)


def _indent_continuation(text: str) -> str:
    return text.replace("\n", "\n    ")


def _bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)
