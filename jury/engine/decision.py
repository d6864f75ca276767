"""The decision study: how precise a model's mean score would be with a given number of cases,
repetitions and judges, and the cheapest numbers that reach a target.

From the variance components of an earlier run (jury.engine.variance), the error variance of a
model's mean over n_c cases, each met n_r times and scored by n_j judges, is

    case / n_c + repetition / (n_c n_r) + judge / n_j + case_judge / (n_c n_j)
        + residual / (n_c n_r n_j)

(cases, encounters and judges drawn afresh from populations like the earlier run's). The judge
term does not shrink with more cases: with few judges some half-widths are out of reach.

The generalizability coefficient is the share of the variance of model means that is true
difference between models: between / (between + error). The between-model variance is
estimated from the earlier run's model means (their variance less their mean error variance,
floored at zero), so it needs at least two models; with one it is undefined.

Pure: numpy and pandas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

Z = float(norm.ppf(0.975))
MAX_CASES = 1_000_000
REPETITION_OPTIONS = range(1, 9)
JUDGE_OPTIONS = range(1, 6)
TARGET_COEFFICIENT = 0.8


@dataclass(frozen=True)
class Costs:
    """Predicted cost in US dollars of one conversation (agent, patient and roster calls) and
    of one judge scoring one conversation on every rubric."""

    conversation: float
    judge: float

    def of(self, cases: int, repetitions: int, judges: int) -> float:
        return cases * repetitions * (self.conversation + judges * self.judge)


@dataclass(frozen=True)
class Plan:
    cases: int
    repetitions: int
    judges: int
    half_width: float
    coefficient: float
    cost: float


def error_variance(components: Mapping[str, float], cases, repetitions, judges) -> float:
    """Variance of a model's mean score; components missing or NaN count as zero."""

    def part(name: str) -> float:
        value = components.get(name, 0.0)
        return 0.0 if value is None or math.isnan(value) else float(value)

    return (
        part("case") / cases
        + part("repetition") / (cases * repetitions)
        + part("judge") / judges
        + part("case_judge") / (cases * judges)
        + part("residual") / (cases * repetitions * judges)
    )


def coefficient(between: float, error: float) -> float:
    """Generalizability coefficient; NaN when the between-model variance is unknown."""
    if between is None or math.isnan(between) or between + error <= 0:
        return math.nan
    return between / (between + error)


def between_model_variance(means: list[float], errors: list[float]) -> float:
    """True variance between models, from their means and the error variance of each."""
    if len(means) < 2:
        return math.nan
    return max(float(np.var(means, ddof=1) - np.mean(errors)), 0.0)


def evaluate(components, between, costs: Costs, cases, repetitions, judges) -> Plan:
    """What a run of this size would give."""
    error = error_variance(components, cases, repetitions, judges)
    return Plan(
        cases=cases,
        repetitions=repetitions,
        judges=judges,
        half_width=Z * math.sqrt(error),
        coefficient=coefficient(between, error),
        cost=costs.of(cases, repetitions, judges),
    )


def target_error(
    *, half_width: float | None = None, goal: float | None = None, between: float = math.nan
) -> float:
    """The error variance a target allows: a half-width of the 95% interval, or a
    generalizability coefficient (which needs the between-model variance)."""
    if half_width is not None:
        if half_width <= 0:
            raise ValueError("the target half-width must be above zero")
        return (half_width / Z) ** 2
    if goal is None or not 0 < goal < 1:
        raise ValueError("the target coefficient must be between 0 and 1")
    if math.isnan(between) or between <= 0:
        return math.nan
    return between * (1 - goal) / goal


def cases_needed(components, repetitions: int, judges: int, allowed_error: float) -> int | None:
    """The fewest cases whose mean reaches the allowed error variance; None when no number of
    cases does (the judge term alone is too large) or it would take more than MAX_CASES."""
    fixed = error_variance(components, math.inf, repetitions, judges)  # the judge term
    if math.isnan(allowed_error) or fixed >= allowed_error:
        return None
    per_case = error_variance(components, 1, repetitions, judges) - fixed
    needed = max(math.ceil(per_case / (allowed_error - fixed) - 1e-9), 1)
    return needed if needed <= MAX_CASES else None


def plans(components, between, costs: Costs, allowed_error: float) -> list[Plan]:
    """For each number of repetitions and judges, the fewest cases reaching the target, cheapest
    first."""
    found = []
    for repetitions in REPETITION_OPTIONS:
        for judges in JUDGE_OPTIONS:
            cases = cases_needed(components, repetitions, judges, allowed_error)
            if cases is not None:
                found.append(evaluate(components, between, costs, cases, repetitions, judges))
    return sorted(found, key=lambda plan: (plan.cost, plan.cases * plan.repetitions))
