"""Pairwise judging with no rubric: which of two conversations handled the patient better.

A judge sees conversation A and conversation B and answers {"better": "A" | "B" | "tie"}. A
sensitivity study asks in both orders (reference as A, then as B) so that a judge favouring a
position cannot pass for a sensitive one; `reference_share` turns one verdict into the share of
the preference the reference got.

Pure Python: no Django.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jury.engine.prompt import render_scenario, render_trace
from llm.engine.chat import ChatRequest, Message
from llm.engine.structured import InvalidOutput
from rubric_lab.engine.prompts import render_evaluation_prompt

VERDICTS = ("A", "B", "tie")


def pairwise_request(
    *,
    first: Sequence[Mapping[str, Any]],
    second: Sequence[Mapping[str, Any]],
    profile: Mapping[str, Any],
    scenario: Mapping[str, Any],
    model: str,
    sample: str = "",
) -> ChatRequest:
    system, user = render_evaluation_prompt(
        "pairwise",
        profile=json.dumps(dict(profile), indent=2, ensure_ascii=False),
        scenario=render_scenario(scenario),
        first=render_trace(first),
        second=render_trace(second),
    )
    return ChatRequest(
        model=model,
        purpose="pairwise_judge",
        system=system,
        messages=(Message(role="user", content=user),),
        hints={
            "first": list(first),
            "second": list(second),
            "profile": dict(profile),
            "scenario": dict(scenario),
        },
        sample=sample,
    )


def validate_pairwise_answer(data: Mapping[str, Any]) -> dict[str, Any]:
    better = data.get("better")
    if isinstance(better, str) and better.strip().lower() == "tie":
        better = "tie"
    elif isinstance(better, str):
        better = better.strip().upper()
    if better not in VERDICTS:
        raise InvalidOutput(f'"better" was {json.dumps(better)}; it must be "A", "B" or "tie".')
    explanation = data.get("explanation")
    if not isinstance(explanation, str) or not explanation.strip():
        raise InvalidOutput('The JSON object needs an "explanation" with 2-3 sentences of text.')
    return {"better": better, "explanation": explanation.strip()}


def reference_share(better: str, *, reference_position: str) -> float:
    """1 when the reference (shown as `reference_position`, "A" or "B") won, 0.5 for a tie."""
    if better == "tie":
        return 0.5
    return 1.0 if better == reference_position else 0.0
