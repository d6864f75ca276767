"""The offline scripted evaluator and editor of critique-then-refine: rules, not a model.

Evaluator (critique): with a rubric, every positive criterion that no assistant message meets
by the coverage script's word rule becomes an action on the longest assistant message, the
heaviest criterion first (three at most); with no rubric (self-critique) it asks only for more
warmth when no message shows any. Editor (edit): each action adds one stock sentence chosen by
the action's words (safety net, empathy, medicines, next steps), none of which states a new
medicine, dose or diagnosis. Behaviours: standard; overreach (the editor also states a
diagnosis, which the validator rejects).
"""

from __future__ import annotations

import json

from jury.engine.offline_judge import EMPATHY
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError, Usage
from rubric_lab.engine.coverage_script import ENTAIL_SHARE, stems
from rubric_lab.engine.perturb import assistant_texts, insert_sentence, longest_assistant_message

BEHAVIOURS = ("standard", "overreach")
MAX_SCRIPTED_ACTIONS = 3
STOCK_SENTENCES = (
    (
        ("warning", "emergency", "911", "worse", "urgent", "safety", "red"),
        "If your symptoms get worse or you notice new warning signs, call 911 or go to the "
        "nearest emergency room.",
    ),
    (
        ("empath", "feel", "worr", "warm", "acknowledg"),
        "I understand this is a worrying time, and you were right to reach out.",
    ),
    (
        ("medic", "dose", "prescri", "refill"),
        "Please keep taking your medicines as prescribed and check with your care team before "
        "changing anything.",
    ),
)
DEFAULT_SENTENCE = (
    "Next step: your care team will follow up with you, and you can message us here any time."
)
OVERREACH_SENTENCE = "This is definitely an infection."


def critique(request: ChatRequest, behaviour: str) -> ChatResponse:
    _check(behaviour)
    events = request.hints.get("events") or []
    target = longest_assistant_message(events)
    if target is None:
        return _response(request, {"actions": []})
    event_id = str(events[target]["event_id"])
    criteria = request.hints.get("criteria")
    if criteria is None:
        warm = any(EMPATHY.search(text) for text in assistant_texts(events))
        actions = [] if warm else [_action(1, event_id, None, "Acknowledge how the patient feels.")]
        return _response(request, {"actions": actions})
    said = stems(" ".join(assistant_texts(events)))
    unmet = sorted(
        (
            (-criterion["weight"], number, criterion["text"])
            for number, criterion in enumerate(criteria, start=1)
            if criterion["weight"] > 0
            and len(stems(criterion["text"]) & said) < ENTAIL_SHARE * len(stems(criterion["text"]))
        ),
    )[:MAX_SCRIPTED_ACTIONS]
    actions = [
        _action(priority, event_id, number, f"Address this rubric point: {text}")
        for priority, (_, number, text) in enumerate(unmet, start=1)
    ]
    return _response(request, {"actions": actions})


def edit(request: ChatRequest, behaviour: str) -> ChatResponse:
    _check(behaviour)
    contents = {str(e["event_id"]): str(e.get("content") or "") for e in request.hints["events"]}
    edited: dict[str, str] = {}
    for action in request.hints.get("plan") or []:
        event_id = action["event_id"]
        sentence = stock_sentence(action["instruction"])
        current = edited.get(event_id, contents.get(event_id, ""))
        if sentence not in current:
            edited[event_id] = insert_sentence(current, sentence)
    if behaviour == "overreach" and edited:
        first = next(iter(edited))
        edited[first] = insert_sentence(edited[first], OVERREACH_SENTENCE)
    edits = [{"event_id": event_id, "content": content} for event_id, content in edited.items()]
    return _response(request, {"edits": edits})


def stock_sentence(instruction: str) -> str:
    lowered = instruction.lower()
    for words, sentence in STOCK_SENTENCES:
        if any(word in lowered for word in words):
            return sentence
    return DEFAULT_SENTENCE


def _action(priority: int, event_id: str, criterion: int | None, instruction: str) -> dict:
    return {
        "priority": priority,
        "event_id": event_id,
        "criterion": criterion,
        "instruction": instruction,
    }


def _check(behaviour: str) -> None:
    if behaviour not in BEHAVIOURS:
        raise ProviderError(
            f"the offline refine script has no behaviour {behaviour!r}; use one of "
            f"{', '.join(BEHAVIOURS)}",
            kind="config",
        )


def _response(request: ChatRequest, answer: dict) -> ChatResponse:
    text = json.dumps(answer)
    prompt = request.system + "".join(m.content for m in request.messages)
    usage = Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
    return ChatResponse(text=text, usage=usage, model=request.model)
