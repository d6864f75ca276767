"""Coverage of expert criteria by a generated rubric (CIA): the two model calls per case.

First the expert criteria are decomposed into atomic constraints; then a judge decides, for
each constraint, whether the generated rubric entails it and which generated criteria do so.
`coverage_of` counts the judgements; the figures (recall, precision, F1, per axis, with their
intervals) and the comparison of two arms are rubric_lab.engine.coverage_stats.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm.engine.chat import ChatRequest, Message
from llm.engine.structured import InvalidOutput
from rubric_lab.engine.coverage_stats import Coverage
from rubric_lab.engine.prompts import render_evaluation_prompt


def coverage_of(judgements: Sequence[Mapping[str, Any]], *, generated: int) -> Coverage:
    """Counts from validated entailment judgements against a rubric of `generated` criteria."""
    matched = {index for j in judgements if j["entailed"] for index in j["criteria"]}
    return Coverage(
        constraints=len(judgements),
        entailed=sum(1 for j in judgements if j["entailed"]),
        generated=generated,
        matched=len(matched),
    )


# --- the two calls ------------------------------------------------------------------------


def decompose_request(criteria: Sequence[str], *, model: str, sample: str = "") -> ChatRequest:
    system, user = render_evaluation_prompt("coverage_decompose", criteria=_numbered(criteria))
    return ChatRequest(
        model=model,
        purpose="coverage_decompose",
        system=system,
        messages=(Message(role="user", content=user),),
        temperature=0.0,
        hints={"criteria": list(criteria)},
        sample=sample,
    )


def validate_constraints(data: Mapping[str, Any], *, criteria: int) -> dict[str, Any]:
    items = data.get("constraints")
    if not isinstance(items, list) or not items:
        raise InvalidOutput('"constraints" must be a non-empty list.')
    constraints = []
    for number, item in enumerate(items, start=1):
        source = item.get("criterion") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if not _whole(source) or not 1 <= source <= criteria:
            raise InvalidOutput(
                f'constraint {number}: "criterion" must be a number from 1 to {criteria}.'
            )
        if not isinstance(text, str) or not text.strip():
            raise InvalidOutput(f'constraint {number}: "text" must be a non-empty sentence.')
        constraints.append({"criterion": source, "text": text.strip()})
    missing = sorted(set(range(1, criteria + 1)) - {c["criterion"] for c in constraints})
    if missing:
        raise InvalidOutput(
            f"expert criteria {', '.join(map(str, missing))} gave no constraint; every "
            "criterion needs at least one."
        )
    return {"constraints": constraints}


def entail_request(
    constraints: Sequence[str], rubric: Sequence[str], *, model: str, sample: str = ""
) -> ChatRequest:
    system, user = render_evaluation_prompt(
        "coverage_entail", constraints=_numbered(constraints), rubric=_numbered(rubric)
    )
    return ChatRequest(
        model=model,
        purpose="coverage_entail",
        system=system,
        messages=(Message(role="user", content=user),),
        temperature=0.0,
        hints={"constraints": list(constraints), "rubric": list(rubric)},
        sample=sample,
    )


def validate_judgements(
    data: Mapping[str, Any], *, constraints: int, generated: int
) -> dict[str, Any]:
    items = data.get("judgements")
    if not isinstance(items, list):
        raise InvalidOutput('"judgements" must be a list with one judgement per constraint.')
    by_constraint: dict[int, dict[str, Any]] = {}
    for item in items:
        judgement = _judgement(item, constraints=constraints, generated=generated)
        if judgement["constraint"] in by_constraint:
            raise InvalidOutput(f"constraint {judgement['constraint']} was judged twice.")
        by_constraint[judgement["constraint"]] = judgement
    missing = sorted(set(range(1, constraints + 1)) - set(by_constraint))
    if missing:
        raise InvalidOutput(f"constraints {', '.join(map(str, missing))} were not judged.")
    return {"judgements": [by_constraint[n] for n in sorted(by_constraint)]}


def _judgement(item: Any, *, constraints: int, generated: int) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise InvalidOutput("each judgement must be a JSON object.")
    number, entailed, cited = item.get("constraint"), item.get("entailed"), item.get("criteria")
    if not _whole(number) or not 1 <= number <= constraints:
        raise InvalidOutput(f'"constraint" must be a number from 1 to {constraints}.')
    if not isinstance(entailed, bool):
        raise InvalidOutput(f'constraint {number}: "entailed" must be true or false.')
    if not isinstance(cited, list) or not all(_whole(c) and 1 <= c <= generated for c in cited):
        raise InvalidOutput(
            f'constraint {number}: "criteria" must list rubric criterion numbers from 1 to '
            f"{generated}."
        )
    if entailed != bool(cited):
        raise InvalidOutput(
            f"constraint {number}: an entailed constraint names the criteria that entail it, "
            "and one that is not entailed names none."
        )
    reason = item.get("reason")
    return {
        "constraint": number,
        "entailed": entailed,
        "criteria": sorted(set(cited)),
        "reason": reason.strip() if isinstance(reason, str) else "",
    }


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{number}. {text}" for number, text in enumerate(items, start=1))
