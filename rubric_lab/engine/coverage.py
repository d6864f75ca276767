"""Coverage of expert criteria by a generated rubric (CIA): recall, precision and F1.

Two model calls per case. First the expert criteria are decomposed into atomic constraints;
then a judge decides, for each constraint, whether the generated rubric entails it and which
generated criteria do so. Recall is the share of constraints entailed; precision is the share
of generated criteria that entail at least one expert constraint (criteria the experts never
asked for count against it); F1 is their harmonic mean. Overall figures are given both pooled
over every constraint and criterion (micro) and as the mean of the per-case figures (macro),
and per axis: recall over the constraints of the expert criteria on each axis, precision over
the generated criteria on each axis (the two sides name their axes apart: HealthBench's
communication_quality is the lab's communication).

Two arms (two generation methods, say) judged against the same expert criteria are compared
constraint by constraint with McNemar's test: only the constraints one arm entails and the
other does not carry information. With fewer than 25 such discordant constraints the p value
is the exact two-sided binomial one (scipy's binomtest, the same as statsmodels' mcnemar with
exact=True); from 25 on, the chi-square statistic with continuity correction, one degree of
freedom (statsmodels' exact=False, correction=True).

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scipy.stats import binomtest, chi2

from benchmark.engine.chat import ChatRequest, Message
from benchmark.engine.structured import InvalidOutput
from rubric_lab.engine.prompts import render_evaluation_prompt


@dataclass(frozen=True)
class Coverage:
    constraints: int
    entailed: int
    generated: int
    matched: int

    @property
    def recall(self) -> float | None:
        return self.entailed / self.constraints if self.constraints else None

    @property
    def precision(self) -> float | None:
        return self.matched / self.generated if self.generated else None

    @property
    def f1(self) -> float | None:
        return f1(self.recall, self.precision)


def f1(recall: float | None, precision: float | None) -> float | None:
    if recall is None or precision is None:
        return None
    return 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)


@dataclass(frozen=True)
class Overall:
    cases: int
    micro: Coverage
    macro_recall: float | None
    macro_precision: float | None
    macro_f1: float | None


def overall(cases: Sequence[Coverage]) -> Overall:
    micro = Coverage(
        constraints=sum(c.constraints for c in cases),
        entailed=sum(c.entailed for c in cases),
        generated=sum(c.generated for c in cases),
        matched=sum(c.matched for c in cases),
    )
    return Overall(
        cases=len(cases),
        micro=micro,
        macro_recall=_mean([c.recall for c in cases]),
        macro_precision=_mean([c.precision for c in cases]),
        macro_f1=_mean([c.f1 for c in cases]),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class AxisCoverage:
    axis: str
    constraints: int  # of the expert criteria on this axis
    entailed: int
    generated: int  # generated criteria on this axis
    matched: int

    @property
    def recall(self) -> float | None:
        return self.entailed / self.constraints if self.constraints else None

    @property
    def precision(self) -> float | None:
        return self.matched / self.generated if self.generated else None


def axis_coverage(
    entailed: Iterable[tuple[str, bool]], matched: Iterable[tuple[str, bool]]
) -> list[AxisCoverage]:
    """Per axis: (expert axis, entailed) for every constraint and (generated axis, matched)
    for every generated criterion, counted; axes in alphabetical order, "" (no axis) last."""
    counts: dict[str, list[int]] = {}
    for index, pairs in ((0, entailed), (2, matched)):
        for axis, hit in pairs:
            row = counts.setdefault(axis, [0, 0, 0, 0])
            row[index] += 1
            row[index + 1] += bool(hit)
    order = sorted(counts, key=lambda axis: (axis == "", axis))
    return [AxisCoverage(axis, *counts[axis]) for axis in order]


EXACT_BELOW = 25


@dataclass(frozen=True)
class McNemar:
    """Paired constraints: entailed by both arms, by A only, by B only, by neither."""

    both: int
    only_a: int
    only_b: int
    neither: int
    statistic: float  # exact: the smaller discordant count; else the corrected chi-square
    p_value: float
    exact: bool

    @property
    def pairs(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def recall_a(self) -> float | None:
        return (self.both + self.only_a) / self.pairs if self.pairs else None

    @property
    def recall_b(self) -> float | None:
        return (self.both + self.only_b) / self.pairs if self.pairs else None


def mcnemar(pairs: Iterable[tuple[bool, bool]]) -> McNemar:
    """McNemar's test on (entailed in arm A, entailed in arm B) per constraint."""
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for a, b in pairs:
        table[(bool(a), bool(b))] += 1
    only_a, only_b = table[(True, False)], table[(False, True)]
    discordant = only_a + only_b
    if discordant < EXACT_BELOW:
        statistic = float(min(only_a, only_b))
        p_value = binomtest(min(only_a, only_b), discordant, 0.5).pvalue if discordant else 1.0
        exact = True
    else:
        statistic = (abs(only_a - only_b) - 1) ** 2 / discordant
        p_value, exact = float(chi2.sf(statistic, 1)), False
    return McNemar(
        both=table[(True, True)], only_a=only_a, only_b=only_b, neither=table[(False, False)],
        statistic=statistic, p_value=float(min(p_value, 1.0)), exact=exact,
    )  # fmt: skip


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
