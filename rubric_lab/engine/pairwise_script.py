"""The offline scripted pairwise judge: transparent rules, not a model.

It scores each conversation with the offline jury judge's six rubric rules
(jury.engine.offline_judge) and prefers the higher total; equal totals are a tie. Behaviours:
standard; first (position-biased: prefers conversation A unless B leads by 3 points or more,
so a study can show what a position bias looks like).
"""

from __future__ import annotations

import json

from jury.engine import offline_judge
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError, Usage

BEHAVIOURS = ("standard", "first")
FIRST_BIAS_MARGIN = 3


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    if behaviour not in BEHAVIOURS:
        raise ProviderError(
            f"the offline pairwise judge has no behaviour {behaviour!r}; use one of "
            f"{', '.join(BEHAVIOURS)}",
            kind="config",
        )
    first, second = (rule_total(request.hints, key) for key in ("first", "second"))
    if behaviour == "first":
        better = "B" if second - first >= FIRST_BIAS_MARGIN else "A"
    else:
        better = "A" if first > second else "B" if second > first else "tie"
    explanation = (
        f"Scripted rule: the six offline rubric rules total {first} for A and {second} for B"
        + (" (position-biased script: A unless B leads by 3)." if behaviour == "first" else ".")
    )
    text = json.dumps({"better": better, "explanation": explanation})
    prompt = request.system + "".join(m.content for m in request.messages)
    usage = Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
    return ChatResponse(text=text, usage=usage, model=request.model)


def rule_total(hints: dict, key: str) -> int:
    shared = {"profile": hints.get("profile") or {}, "scenario": hints.get("scenario") or {}}
    return sum(
        offline_judge.judge({**shared, "rubric": rubric, "events": hints.get(key) or []})[0]
        for rubric in offline_judge.RULES
    )
