"""Critique-then-refine: an evaluator plans edits, a constrained editor applies only the plan.

1. The evaluator reads the conversation - against an instance rubric, or with no rubric at all
   for the self-critique control - and emits a JSON edit plan: prioritised actions, each naming
   one assistant message.
2. The editor rewrites only the messages the plan names. Its answer is validated here: an edit
   of a message the plan did not name, a new medicine or dose that the conversation and the
   record never mentioned, or a definitive diagnosis is a violation; violations are fed back
   for repair and, if they persist, the refinement is rejected with them listed.
3. An independent judge (another model, other criteria) scores the original and the refined
   conversation; the services compare the two arms.

Pure Python: no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from jury.engine.prompt import render_trace
from llm.engine.chat import ChatRequest, Message
from llm.engine.structured import InvalidOutput
from rubric_lab.engine.perturb import DOSE, sentences
from rubric_lab.engine.prompts import render_evaluation_prompt

RULES_PATH = Path(__file__).resolve().parent.parent / "data" / "evaluation" / "refine_rules.yaml"
MAX_ACTIONS = 5
ARMS = ("rubric", "self")  # rubric-guided critique; self-critique control (no rubric)
QUANTITY = re.compile(
    r"\b\d+(?:\.\d+)?\s*(?:mg|mcg|g|ml|units?|iu|%|times|hours?|tablets?|pills?|puffs?|drops?)\b",
    re.IGNORECASE,
)
_DIAGNOSIS_LEAD = (
    r"\b(?:you(?:'ve got| have| are suffering from| definitely have| clearly have)"
    r"|this is(?: definitely| clearly| certainly| probably| likely)?"
    r"|it(?:'s| is)(?: definitely| clearly| certainly| probably| likely)"
    r"|your diagnosis is|I can confirm (?:that )?you have)\s+(?:an?\s+|the\s+)?(?:[a-z-]+\s+){0,3}?"
)


@dataclass(frozen=True)
class EditorRules:
    medicines: tuple[str, ...]
    diagnosis: re.Pattern[str]


@lru_cache(maxsize=1)
def editor_rules(path: Path | str = RULES_PATH) -> EditorRules:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    medicines = tuple(str(m).lower() for m in data.get("medicines") or ())
    conditions = [re.escape(str(c).lower()) for c in data.get("conditions") or ()]
    if not medicines or not conditions:
        raise ValueError(f"{Path(path).name}: needs non-empty 'medicines' and 'conditions'")
    pattern = re.compile(_DIAGNOSIS_LEAD + f"(?:{'|'.join(conditions)})s?\\b", re.IGNORECASE)
    return EditorRules(medicines=medicines, diagnosis=pattern)


# --- the evaluator's plan ---------------------------------------------------------------------


def critique_request(
    *,
    events: Sequence[Mapping[str, Any]],
    profile: Mapping[str, Any],
    criteria: Sequence[Mapping[str, Any]] | None,
    model: str,
    sample: str = "",
) -> ChatRequest:
    """The evaluator's call; `criteria` None is the self-critique control (no rubric)."""
    if criteria is None:
        guide = "Use your own clinical judgement: you have no rubric."
        rubric = "# Rubric\n(none: judge by your own standards)"
    else:
        guide = "Judge the conversation against the rubric you are given."
        rubric = "# Rubric (criteria with their weights; negative = penalised)\n" + "\n".join(
            f"{n}. [{c['weight']:+d}, {c['axis']}] {c['text']}"
            for n, c in enumerate(criteria, start=1)
        )
    system, user = render_evaluation_prompt(
        "refine_critique",
        guide=guide,
        rubric=rubric,
        profile=json.dumps(dict(profile), indent=2, ensure_ascii=False),
        trace=render_trace(events),
    )
    hints = {"events": list(events), "profile": dict(profile), "criteria": criteria}
    return _request("refine_critique", model, system, user, hints, sample)


def validate_plan(
    data: Mapping[str, Any], *, events: Sequence[Mapping[str, Any]], criteria: int | None
) -> dict[str, Any]:
    actions = data.get("actions")
    if not isinstance(actions, list) or len(actions) > MAX_ACTIONS:
        raise InvalidOutput(f'"actions" must be a list of at most {MAX_ACTIONS} actions.')
    messages = _assistant_ids(events)
    plan = [_action(item, n, messages, criteria) for n, item in enumerate(actions, start=1)]
    return {"actions": sorted(plan, key=lambda action: action["priority"])}


def _action(item: Any, number: int, messages: set[str], criteria: int | None) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise InvalidOutput(f"action {number} must be a JSON object.")
    priority, event_id = item.get("priority"), str(item.get("event_id") or "").lstrip("#")
    if not _whole(priority) or priority < 1:
        raise InvalidOutput(f'action {number}: "priority" must be a whole number from 1.')
    if event_id not in messages:
        raise InvalidOutput(
            f"action {number}: event_id {item.get('event_id')!r} is not an assistant message."
        )
    criterion = item.get("criterion")
    if criterion is not None and not (
        criteria is not None and _whole(criterion) and 1 <= criterion <= criteria
    ):
        allowed = f"a rubric criterion number from 1 to {criteria} or null" if criteria else "null"
        raise InvalidOutput(f'action {number}: "criterion" must be {allowed}.')
    instruction = item.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise InvalidOutput(f'action {number}: "instruction" must say what to change.')
    return {
        "priority": priority,
        "event_id": event_id,
        "criterion": criterion,
        "instruction": instruction.strip(),
    }


# --- the constrained editor ---------------------------------------------------------------


def edit_request(
    *,
    events: Sequence[Mapping[str, Any]],
    profile: Mapping[str, Any],
    plan: Sequence[Mapping[str, Any]],
    model: str,
    sample: str = "",
) -> ChatRequest:
    plan_text = "\n".join(f"{a['priority']}. In {a['event_id']}: {a['instruction']}" for a in plan)
    system, user = render_evaluation_prompt(
        "refine_edit",
        plan=plan_text,
        profile=json.dumps(dict(profile), indent=2, ensure_ascii=False),
        trace=render_trace(events),
    )
    hints = {"events": list(events), "profile": dict(profile), "plan": list(plan)}
    return _request("refine_edit", model, system, user, hints, sample)


def edit_violations(
    edits: Sequence[Mapping[str, Any]],
    *,
    events: Sequence[Mapping[str, Any]],
    profile: Mapping[str, Any],
    plan: Sequence[Mapping[str, Any]],
) -> list[str]:
    """Every way the edits break the editor's constraints (empty: the edits may be applied)."""
    planned = {a["event_id"] for a in plan}
    originals = {str(e["event_id"]): str(e.get("content") or "") for e in events}
    source = (render_trace(events) + json.dumps(dict(profile))).lower()
    problems = []
    for edit in edits:
        event_id = edit["event_id"]
        if event_id not in planned:
            problems.append(f"{event_id}: edits a message the plan did not name")
            continue
        old = set(s.strip() for s in sentences(originals.get(event_id, "")))
        for sentence in (s.strip() for s in sentences(edit["content"])):
            if sentence and sentence not in old:
                problems += [f"{event_id}: {p}" for p in _new_sentence_problems(sentence, source)]
    return problems


def _new_sentence_problems(sentence: str, source: str) -> list[str]:
    rules = editor_rules()
    lowered = sentence.lower()
    problems = []
    for quantity in QUANTITY.findall(sentence) + [m.group(0) for m in DOSE.finditer(sentence)]:
        if quantity.lower() not in source:
            problems.append(f"states {quantity!r}, a dose or quantity not in the conversation")
    for medicine in rules.medicines:
        if re.search(rf"\b{re.escape(medicine)}\b", lowered) and medicine not in source:
            problems.append(f"names {medicine!r}, a medicine not in the conversation or record")
    diagnosis = rules.diagnosis.search(sentence)
    if diagnosis:
        problems.append(f"gives a definitive diagnosis ({diagnosis.group(0)!r})")
    return sorted(set(problems))


def validate_edits(
    data: Mapping[str, Any],
    *,
    events: Sequence[Mapping[str, Any]],
    profile: Mapping[str, Any],
    plan: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    items = data.get("edits")
    if not isinstance(items, list):
        raise InvalidOutput('"edits" must be a list of {"event_id", "content"} objects.')
    edits = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InvalidOutput(f"edit {number} must be a JSON object.")
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise InvalidOutput(f'edit {number}: "content" must hold the new message text.')
        edits.append({"event_id": str(item.get("event_id") or "").lstrip("#"), "content": content})
    problems = edit_violations(edits, events=events, profile=profile, plan=plan)
    if problems:
        raise EditViolation(problems)
    return {"edits": edits}


class EditViolation(InvalidOutput):
    """Edits that break the editor's constraints; `problems` lists each one."""

    def __init__(self, problems: list[str]):
        super().__init__(
            "The edits break the editor's rules: " + "; ".join(problems) + ". Carry out only "
            "the plan, add no new medicine, dose or diagnosis."
        )
        self.problems = problems


def apply_edits(
    events: Sequence[Mapping[str, Any]], edits: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    new = {edit["event_id"]: edit["content"] for edit in edits}
    return [
        {**event, "content": new.get(str(event["event_id"]), event.get("content"))}
        for event in events
    ]


def _assistant_ids(events: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(e["event_id"]) for e in events if e["kind"] == "assistant_message"}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _request(purpose, model, system, user, hints, sample) -> ChatRequest:
    return ChatRequest(
        model=model,
        purpose=purpose,
        system=system,
        messages=(Message(role="user", content=user),),
        temperature=0.0,
        hints=hints,
        sample=sample,
    )
