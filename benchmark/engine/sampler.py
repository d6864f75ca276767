"""Reproducible seed sampling from a Distribution.

Same distribution + same integer seed -> the same seeds on any machine and in any process:
draws come from a private random.Random (Mersenne Twister, seeded from the integer), never
from the global generator or from Python's salted hash(). Seeds are drawn one after another,
so the first k seeds of a larger sample equal a sample of k: a run can be extended later
without changing the cases it already has.

Condition, age group and sex come together from the distribution's eligibility plan (see
benchmark.engine.eligibility): a seed is either plausible, or breaks exactly one rule on
purpose and says which in `broken_rule`. The other attributes are drawn independently.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from benchmark.engine.distribution import INDEPENDENT_ATTRIBUTES, Distribution
from benchmark.engine.eligibility import Cell, Rule


class _Table:
    """Values with cumulative probabilities, ready for one bisect per draw."""

    __slots__ = ("values", "cumulative", "total", "last")

    def __init__(self, values: Iterable[Any], probabilities: Iterable[float]):
        self.values = tuple(values)
        self.cumulative = tuple(accumulate(probabilities))
        self.total = self.cumulative[-1]
        self.last = len(self.values) - 1

    @classmethod
    def of(cls, probabilities: dict[Any, float]) -> _Table:
        return cls(probabilities, probabilities.values())

    def draw(self, rng: random.Random) -> Any:
        # Same rule as random.choices: scale by the last cumulative value, and never step
        # past the end when float rounding lands a draw on the total itself.
        position = bisect_right(self.cumulative, rng.random() * self.total)
        return self.values[position if position < self.last else self.last]


@dataclass(frozen=True)
class _Tables:
    """Everything one draw needs, looked up once per sample rather than once per seed."""

    cells: _Table  # of eligibility Cells
    weighted: dict[str, _Table]
    subcategories: dict[str, _Table]
    age_ranges: dict[str, tuple[int, int]]
    identities: dict[tuple[str, str], str]
    rule_of: Callable[[str], Rule]  # Distribution.rule: a condition's eligibility rule

    @classmethod
    def of(cls, distribution: Distribution) -> _Tables:
        plan = distribution.plan
        return cls(
            cells=_Table(plan.cells, plan.probabilities),
            weighted={
                name: _Table.of(distribution.probabilities(name)) for name in INDEPENDENT_ATTRIBUTES
            },
            subcategories={
                category: _Table.of(dict(table)) for category, table in distribution.subcategories
            },
            age_ranges={group: (low, high) for group, low, high in distribution.age_ranges},
            identities={
                (sex, gender): identity for sex, gender, identity in distribution.gender_identities
            },
            rule_of=distribution.rule,
        )


def sample_seeds(distribution: Distribution, n: int, seed: int) -> list[dict[str, Any]]:
    """Draw `n` seeds. Each has the contract's attribute keys plus `index`, `age`,
    `age_range` ([youngest, oldest] of its age group, so checks need no distribution) and
    `broken_rule` (None, or {"rule": "sex" | "age", "text": why} for an infeasible seed)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    rng = random.Random(seed)
    tables = _Tables.of(distribution)
    return [_draw_seed(index, rng, tables) for index in range(n)]


def _draw_seed(index: int, rng: random.Random, tables: _Tables) -> dict[str, Any]:
    cell: Cell = tables.cells.draw(rng)
    age = cell.years[int(rng.random() * len(cell.years))]
    weighted = tables.weighted
    severity = weighted["severity"].draw(rng)
    category = weighted["task_category"].draw(rng)
    gender = weighted["gender"].draw(rng)
    care_preference = weighted["care_preference"].draw(rng)
    personality = weighted["personality"].draw(rng)
    return {
        "index": index,
        "condition": cell.condition,
        "severity": severity,
        "task_category": category,
        "task_subcategory": tables.subcategories[category].draw(rng),
        "age_group": cell.age_group,
        "age": age,
        "age_range": list(tables.age_ranges[cell.age_group]),
        "sex": cell.sex,
        "gender": gender,
        "gender_identity": tables.identities[cell.sex, gender],
        "care_preference": care_preference,
        "personality": personality,
        "broken_rule": None if cell.broken_rule is None else _broken_rule(cell, age, tables),
    }


def _broken_rule(cell: Cell, age: int, tables: _Tables) -> dict[str, str]:
    rule = tables.rule_of(cell.condition)
    text = rule.explain(cell.broken_rule, cell.sex, cell.age_group, age)
    return {"rule": cell.broken_rule, "text": text}
