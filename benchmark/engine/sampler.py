"""Reproducible seed sampling from a Distribution.

Same distribution + same integer seed -> the same seeds on any machine and in any process:
draws come from a private random.Random (Mersenne Twister, seeded from the integer), never
from the global generator or from Python's salted hash(). Seeds are drawn one after another,
so the first k seeds of a larger sample equal a sample of k: a run can be extended later
without changing the cases it already has.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from benchmark.engine.distribution import WEIGHTED_ATTRIBUTES, Distribution


@dataclass(frozen=True)
class _Table:
    """Values with cumulative probabilities, ready for one bisect per draw."""

    values: tuple[str, ...]
    cumulative: tuple[float, ...]

    @classmethod
    def of(cls, probabilities: dict[str, float]) -> _Table:
        return cls(tuple(probabilities), tuple(accumulate(probabilities.values())))

    def draw(self, rng: random.Random) -> str:
        # Same rule as random.choices: scale by the last cumulative value so float rounding
        # in the normalised weights can never push a draw past the end.
        position = bisect_right(self.cumulative, rng.random() * self.cumulative[-1])
        return self.values[min(position, len(self.values) - 1)]


@dataclass(frozen=True)
class _Tables:
    """Everything one draw needs, looked up once per sample rather than once per seed."""

    weighted: dict[str, _Table]
    subcategories: dict[str, _Table]
    age_ranges: dict[str, tuple[int, int]]
    identities: dict[tuple[str, str], str]

    @classmethod
    def of(cls, distribution: Distribution) -> _Tables:
        return cls(
            weighted={
                name: _Table.of(distribution.probabilities(name)) for name in WEIGHTED_ATTRIBUTES
            },
            subcategories={
                category: _Table.of(dict(table)) for category, table in distribution.subcategories
            },
            age_ranges={group: (low, high) for group, low, high in distribution.age_ranges},
            identities={
                (sex, gender): identity for sex, gender, identity in distribution.gender_identities
            },
        )


def sample_seeds(distribution: Distribution, n: int, seed: int) -> list[dict[str, Any]]:
    """Draw `n` seeds. Each has the contract's attribute keys plus `index`, `age` and
    `age_range` ([youngest, oldest] of its age group, so checks need no distribution)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if n < 0:
        raise ValueError(f"n must not be negative, got {n}")
    rng = random.Random(seed)
    tables = _Tables.of(distribution)
    return [_draw_seed(index, rng, tables) for index in range(n)]


def _draw_seed(index: int, rng: random.Random, tables: _Tables) -> dict[str, Any]:
    drawn = {name: table.draw(rng) for name, table in tables.weighted.items()}
    youngest, oldest = tables.age_ranges[drawn["age_group"]]
    category = drawn["task_category"]
    return {
        "index": index,
        "condition": drawn["condition"],
        "severity": drawn["severity"],
        "task_category": category,
        "task_subcategory": tables.subcategories[category].draw(rng),
        "age_group": drawn["age_group"],
        "age": rng.randint(youngest, oldest),
        "age_range": [youngest, oldest],
        "sex": drawn["sex"],
        "gender": drawn["gender"],
        "gender_identity": tables.identities[drawn["sex"], drawn["gender"]],
        "care_preference": drawn["care_preference"],
        "personality": drawn["personality"],
    }
