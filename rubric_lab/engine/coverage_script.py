"""The offline scripted coverage judge (CIA): word rules, not a model.

Decompose: each expert criterion splits at ";" and at " and " between two clauses of three
words or more. Entail: a rubric criterion entails a constraint when it holds at least half of
the constraint's content words (words of four letters or more, compared on their first five
letters, so "warns"/"warning" match). Crude on purpose, and labelled scripted wherever shown.
"""

from __future__ import annotations

import json
import re

from llm.engine.chat import ChatRequest, ChatResponse, Usage

BEHAVIOURS = ("standard",)
ENTAIL_SHARE = 0.5
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "when",
        "what",
        "your",
        "they",
        "them",
        "their",
        "have",
        "will",
        "should",
    ]
)


def decompose(request: ChatRequest, behaviour: str) -> ChatResponse:
    constraints = [
        {"criterion": number, "text": clause}
        for number, text in enumerate(request.hints.get("criteria") or [], start=1)
        for clause in clauses(str(text))
    ]
    return _response(request, {"constraints": constraints})


def entail(request: ChatRequest, behaviour: str) -> ChatResponse:
    rubric = [stems(text) for text in request.hints.get("rubric") or []]
    judgements = []
    for number, text in enumerate(request.hints.get("constraints") or [], start=1):
        wanted = stems(text)
        cited = [
            index
            for index, words in enumerate(rubric, start=1)
            if wanted and len(wanted & words) >= ENTAIL_SHARE * len(wanted)
        ]
        judgements.append(
            {
                "constraint": number,
                "entailed": bool(cited),
                "criteria": cited,
                "reason": "Scripted rule: shared content words."
                if cited
                else "Scripted rule: no criterion shares half of the constraint's content words.",
            }
        )
    return _response(request, {"judgements": judgements})


def clauses(text: str) -> list[str]:
    parts = [p.strip(" .") for chunk in text.split(";") for p in re.split(r"\band\b", chunk)]
    merged: list[str] = []
    for part in parts:
        if merged and (len(part.split()) < 3 or len(merged[-1].split()) < 3):
            merged[-1] = f"{merged[-1]} and {part}".strip()
        elif part:
            merged.append(part)
    return merged or [text.strip()]


def stems(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in _STOP}


def _response(request: ChatRequest, answer: dict) -> ChatResponse:
    text = json.dumps(answer)
    prompt = request.system + "".join(m.content for m in request.messages)
    usage = Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
    return ChatResponse(text=text, usage=usage, model=request.model)
