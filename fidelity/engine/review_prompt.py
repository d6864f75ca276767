"""The fidelity reviewer's call: its prompt (fidelity/data/prompts/patient_fidelity.md, a
versioned data file in the benchmark's prompt format) filled with the patient's record, hidden
scenario and personality, and the transcript with every message's id.

The reviewer reads what the simulated patient was given (the record, the story, the task, the
personality), never the name of the agent under test or a jury score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmark.engine.agents.prompts import PromptTemplate, format_profile, load_prompt
from fidelity.engine.kinds import ErrorKind, default_kinds
from llm.engine.chat import ChatRequest, Message

PROMPT_FILE = Path(__file__).resolve().parents[1] / "data" / "prompts" / "patient_fidelity.md"
PURPOSE = "fidelity_review"
PLACEHOLDERS = frozenset({"profile", "story", "task", "personality", "kinds"})
# How much of a tool result the reviewer sees: enough to follow the conversation.
TOOL_RESULT_CHARS = 300
SPEAKERS = {"patient_message": "Patient", "assistant_message": "Assistant"}


@dataclass(frozen=True)
class ReviewCase:
    """What the reviewer reads about one conversation. `events` are trace events as dicts
    (event_id, kind, content, tool_name, arguments); `traits` the personality's levels."""

    profile: Mapping[str, Any]
    story: str
    seed: Mapping[str, Any]
    personality: str  # the persona lines the patient was given (Personality.render())
    traits: Mapping[str, str]
    events: Sequence[Mapping[str, Any]]
    termination_reason: str

    @property
    def patient_event_ids(self) -> frozenset[str]:
        return frozenset(e["event_id"] for e in self.events if e["kind"] == "patient_message")


@lru_cache(maxsize=1)
def review_prompt() -> PromptTemplate:
    prompt = load_prompt(PROMPT_FILE)
    unknown = prompt.placeholders - PLACEHOLDERS
    if unknown:
        raise ValueError(f"{prompt.name}: unknown placeholders {sorted(unknown)}")
    return prompt


def render_transcript(events: Sequence[Mapping[str, Any]], termination_reason: str) -> str:
    """One line per message or tool step, each opening with its id in brackets; the
    assistant's hidden reasoning is left out (the patient never saw it)."""
    lines = []
    for event in events:
        kind, content = event["kind"], (event.get("content") or "").strip()
        if kind in SPEAKERS:
            said = content or "(left the conversation)"
            lines.append(f"[{event['event_id']}] {SPEAKERS[kind]}: {said}")
        elif kind == "tool_call":
            arguments = json.dumps(event.get("arguments") or {}, ensure_ascii=False)
            lines.append(
                f"[{event['event_id']}] (assistant calls {event['tool_name']} {arguments})"
            )
        elif kind == "tool_result":
            lines.append(f"[{event['event_id']}] (result: {content[:TOOL_RESULT_CHARS]})")
    lines.append(f"(The conversation ended: {termination_reason.replace('_', ' ') or 'unknown'}.)")
    return "\n".join(lines)


def review_request(
    case: ReviewCase, *, model: str, sample: str, kinds: Sequence[ErrorKind] | None = None
) -> ChatRequest:
    kinds = tuple(kinds or default_kinds())
    seed = case.seed
    task = f"{seed.get('task_category', '')} / {seed.get('task_subcategory', '')}".strip(" /")
    system = review_prompt().render(
        {
            "profile": format_profile(case.profile),
            "story": case.story.strip(),
            "task": task or "not stated",
            "personality": case.personality.strip() or "not stated",
            "kinds": "\n".join(f"- {kind.id}: {kind.description.strip()}" for kind in kinds),
        }
    )
    transcript = render_transcript(case.events, case.termination_reason)
    return ChatRequest(
        model=model,
        purpose=PURPOSE,
        system=system,
        messages=(Message(role="user", content=f"<transcript>\n{transcript}\n</transcript>"),),
        hints={
            "profile": dict(case.profile),
            "story": case.story,
            "seed": dict(seed),
            "traits": dict(case.traits),
            "events": [
                {"event_id": e["event_id"], "kind": e["kind"], "content": e.get("content") or ""}
                for e in case.events
            ],
            "termination_reason": case.termination_reason,
        },
        sample=sample,
    )
