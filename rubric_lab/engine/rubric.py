"""Instance rubrics: criteria with an axis and an integer clinical weight, and their score.

A response's score is the weighted sum of the criteria it meets: sum of w_j * [met_j].
Negative weights mark behaviours to penalise, so meeting such a criterion lowers the score.
The normalised score divides that sum by the sum of the positive weights (the best possible
score), so 1.0 means every positive criterion met and no penalised one. It is NOT clipped:
penalties can take it below 0, which keeps two bad responses apart instead of tying them at 0.

A rubric with no positive weight has no best possible score: its normalised score is None
("undefined"), never 0 or a division by zero. The pipeline refuses to produce such a rubric,
so this only arises for criteria built by hand.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

AXES = ("accuracy", "completeness", "communication", "context_awareness", "safety")
# Axes about what is medically true or required: a criterion on them must cite a fact.
FACT_AXES = frozenset({"accuracy", "completeness", "safety"})
INTENT_KEYS = ("persona", "urgency", "uncertainty", "missing_context", "tone")
MIN_WEIGHT, MAX_WEIGHT = -10, 10
# An instance rubric holds 5 to 14 criteria: fewer cannot cover a case, more stop being
# specific to it (the synthesis, audit and direct-generation prompts say the same).
MIN_CRITERIA, MAX_CRITERIA = 5, 14


class RubricError(ValueError):
    """Criteria that break the rubric's rules; the message says which and why."""


@dataclass(frozen=True)
class Criterion:
    text: str
    axis: str
    weight: int
    fact_ids: tuple[str, ...] = ()
    passage_ids: tuple[str, ...] = ()
    intent_basis: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise RubricError("a criterion needs text")
        if self.axis not in AXES:
            raise RubricError(f"axis {self.axis!r} is not one of {', '.join(AXES)}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int):
            raise RubricError(f"weight {self.weight!r} must be an integer")
        if not MIN_WEIGHT <= self.weight <= MAX_WEIGHT or self.weight == 0:
            raise RubricError(
                f"weight {self.weight} must lie in [{MIN_WEIGHT}, {MAX_WEIGHT}] and not be 0"
            )

    @property
    def penalises(self) -> bool:
        return self.weight < 0


@dataclass(frozen=True)
class RubricScore:
    weighted_sum: int
    positive_total: int
    normalised: float | None  # None when no criterion has a positive weight

    def as_dict(self) -> dict[str, Any]:
        return {
            "weighted_sum": self.weighted_sum,
            "positive_total": self.positive_total,
            "normalised": self.normalised,
        }


def positive_total(criteria: Sequence[Criterion]) -> int:
    return sum(criterion.weight for criterion in criteria if criterion.weight > 0)


def score_rubric(criteria: Sequence[Criterion], met: Sequence[bool]) -> RubricScore:
    """The weighted and normalised score of one response, given one decision per criterion."""
    if len(met) != len(criteria):
        raise RubricError(f"{len(met)} decisions for {len(criteria)} criteria")
    weighted = sum(criterion.weight for criterion, ok in zip(criteria, met, strict=True) if ok)
    best = positive_total(criteria)
    return RubricScore(weighted, best, weighted / best if best else None)


def axis_scores(criteria: Sequence[Any], met: Sequence[bool]) -> dict[str, float | None]:
    """The normalised score on each axis of the criteria: the weights met on that axis over
    its positive weights (None for an axis with no positive weight)."""
    scores = {}
    for axis in dict.fromkeys(criterion.axis for criterion in criteria):
        pairs = [(c, ok) for c, ok in zip(criteria, met, strict=True) if c.axis == axis]
        scored = score_rubric([c for c, _ in pairs], [ok for _, ok in pairs])
        scores[axis] = scored.normalised
    return scores


def criteria_from_rows(
    rows: Sequence[Mapping[str, Any]],
    *,
    fact_passages: Mapping[str, Sequence[str]],
    with_intent: bool = True,
    require_support: bool = True,
) -> list[Criterion]:
    """Criteria from a model's JSON rows, checked against the reference board.

    `fact_passages` maps each known fact id to the passages behind it; a criterion's passages
    are those of the facts it cites, so every criterion links back to its evidence. Raises
    RubricError naming the first bad row (index from 1). `require_support=False` is for a
    rubric written with no reference board (the direct-generation baseline): its criteria
    cite nothing."""
    if not rows:
        raise RubricError("the rubric has no criteria")
    criteria = [
        _criterion_of(number, row, fact_passages, with_intent, require_support)
        for number, row in enumerate(rows, 1)
    ]
    texts = [criterion.text.strip().lower() for criterion in criteria]
    if len(set(texts)) != len(texts):
        raise RubricError("two criteria have the same text; merge them")
    if positive_total(criteria) == 0:
        raise RubricError("no criterion has a positive weight; the rubric could never be met")
    return criteria


def check_criterion_count(count: int) -> None:
    """Refuse a rubric with fewer than MIN_CRITERIA or more than MAX_CRITERIA criteria."""
    if not MIN_CRITERIA <= count <= MAX_CRITERIA:
        noun = "criterion" if count == 1 else "criteria"
        raise RubricError(
            f"the rubric has {count} {noun}; an instance rubric needs {MIN_CRITERIA} to "
            f"{MAX_CRITERIA} criteria"
        )


def _criterion_of(
    number: int,
    row: Any,
    fact_passages: Mapping[str, Sequence[str]],
    with_intent: bool,
    require_support: bool,
) -> Criterion:
    if not isinstance(row, Mapping):
        raise RubricError(f"criterion {number} is not an object")
    fact_ids = _strings(row.get("fact_ids", []), f"criterion {number} fact_ids")
    basis = _strings(row.get("intent_basis", []), f"criterion {number} intent_basis")
    unknown = [fact for fact in fact_ids if fact not in fact_passages]
    if unknown:
        raise RubricError(f"criterion {number} cites unknown fact(s) {', '.join(unknown)}")
    bad_basis = [key for key in basis if key not in INTENT_KEYS]
    if bad_basis or (basis and not with_intent):
        allowed = ", ".join(INTENT_KEYS) if with_intent else "nothing (no intent was inferred)"
        raise RubricError(f"criterion {number} intent_basis may only name {allowed}")
    try:
        criterion = Criterion(
            text=str(row.get("text") or ""),
            axis=str(row.get("axis") or ""),
            weight=row.get("weight"),
            fact_ids=tuple(fact_ids),
            passage_ids=_passages_of(fact_ids, fact_passages),
            intent_basis=tuple(basis),
        )
    except RubricError as error:
        raise RubricError(f"criterion {number}: {error}") from None
    if not require_support:
        return criterion
    if criterion.axis in FACT_AXES and not fact_ids:
        raise RubricError(f"criterion {number} is about {criterion.axis} but cites no fact")
    if not fact_ids and not basis:
        raise RubricError(f"criterion {number} rests on nothing: cite facts or an intent basis")
    return criterion


def _strings(value: Any, label: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RubricError(f"{label} must be a list of strings")
    return value


def _passages_of(fact_ids: Sequence[str], fact_passages: Mapping[str, Sequence[str]]):
    return tuple(dict.fromkeys(p for fact in fact_ids for p in fact_passages[fact]))
