"""Who can plausibly have each condition, and the sampling plan that honours it.

A condition's eligibility rule names the sexes at birth, age groups and ages (in years) a
patient with it can have; an attribute the rule leaves out is open. Its `breakable` list
names the rules whose breach is a plain contradiction (a man with endometriosis, a child with
macular degeneration) rather than a rarity, the only ones an infeasible seed may break.

The plan turns the distribution's independent weights into one joint table over
(condition, age group, sex):

- eligible cells get (1 - infeasible share) of the mass, fitted by iterative proportional
  fitting so the condition, age group and sex shares stay at their configured values
  wherever the rules allow it;
- the infeasible share goes to cells that break exactly one breakable rule, in proportion to
  how often independent draws would have produced them by accident. An age rule is broken
  only into age groups it excludes entirely, so no infeasible seed sits one year outside a
  boundary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SEX_RULE, AGE_RULE = "sex", "age"
ELIGIBLE = "eligible"
BREAKS = {SEX_RULE: "breaks the sex rule", AGE_RULE: "breaks the age rule"}
# The attributes whose shares the fit keeps at their targets, in fitting order. Condition
# comes last: when the rules make the targets incompatible (most conditions adult-only but a
# large pediatric weight, say) the condition mix is kept exactly and the age group or sex
# shares show the shortfall.
FITTED = ("age_group", "sex", "condition")
FIT_TOLERANCE = 1e-10
MAX_FIT_ROUNDS = 300  # fits that can converge do so in a few dozen; the rest stop here


@dataclass(frozen=True)
class Rule:
    """The patients a condition is plausible for; None means that attribute is open."""

    condition: str
    sexes: tuple[str, ...] | None = None
    age_groups: tuple[str, ...] | None = None
    ages: tuple[int, int] | None = None  # youngest, oldest (inclusive)
    breakable: tuple[str, ...] = ()  # SEX_RULE and/or AGE_RULE

    @property
    def kinds(self) -> tuple[str, ...]:
        """The rules this condition has."""
        kinds = (SEX_RULE,) if self.sexes is not None else ()
        if self.age_groups is not None or self.ages is not None:
            kinds += (AGE_RULE,)
        return kinds

    def allows_sex(self, sex: str) -> bool:
        return self.sexes is None or sex in self.sexes

    def allowed_years(self, age_group: str, youngest: int, oldest: int) -> range:
        """The ages of `age_group` (spanning youngest-oldest) this condition is plausible at."""
        if self.age_groups is not None and age_group not in self.age_groups:
            return range(0)
        if self.ages is not None:
            youngest, oldest = max(youngest, self.ages[0]), min(oldest, self.ages[1])
        return range(youngest, oldest + 1)

    def allows_age(self, age_group: str, age: int) -> bool:
        return age in self.allowed_years(age_group, age, age)

    def broken(self, sex: str, age_group: str, age: int) -> list[str]:
        """The rules a patient of this sex, age group and age breaks."""
        broken = [] if self.allows_sex(sex) else [SEX_RULE]
        return broken + ([] if self.allows_age(age_group, age) else [AGE_RULE])

    def explain(self, kind: str, sex: str, age_group: str, age: int) -> str:
        """One sentence saying which rule a patient breaks and how."""
        if kind == SEX_RULE:
            allowed = " or ".join(self.sexes or ())
            return f"{self.condition} needs {allowed} sex at birth; this patient was born {sex}."
        return f"{self.condition} needs {self._age_text()}; this patient is {age} ({age_group})."

    def _age_text(self) -> str:
        parts = []
        if self.age_groups is not None:
            parts.append("age group " + " or ".join(self.age_groups))
        if self.ages is not None:
            parts.append(f"age {self.ages[0]}-{self.ages[1]}")
        return " and ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.sexes is not None:
            data["sex"] = list(self.sexes)
        if self.age_groups is not None:
            data["age_groups"] = list(self.age_groups)
        if self.ages is not None:
            data["ages"] = list(self.ages)
        if self.breakable:
            data["breakable"] = list(self.breakable)
        return data


@dataclass(frozen=True)
class Cell:
    """One joint value: a seed drawn here gets these attributes and an age from `years`."""

    condition: str
    age_group: str
    sex: str
    years: tuple[int, ...]
    broken_rule: str | None  # None, SEX_RULE or AGE_RULE


@dataclass(frozen=True)
class SamplingPlan:
    cells: tuple[Cell, ...]
    probabilities: tuple[float, ...]

    def shares(self, attribute: str) -> dict[str, float]:
        """Expected share of each value of a fitted attribute, or of `eligibility`."""
        if attribute == "eligibility":
            keys = [eligibility_label(cell.broken_rule) for cell in self.cells]
        else:
            keys = [getattr(cell, attribute) for cell in self.cells]
        return _totals(list(self.probabilities), keys)


def eligibility_label(broken_rule: str | None) -> str:
    return BREAKS[broken_rule] if broken_rule else ELIGIBLE


def build_plan(
    targets: dict[str, dict[str, float]],
    age_ranges: dict[str, tuple[int, int]],
    rules: dict[str, Rule],
    infeasible_share: float,
) -> SamplingPlan:
    """The joint table for `targets` (condition, age_group and sex probabilities)."""
    eligible, breaking = _candidate_cells(targets, age_ranges, rules)
    if infeasible_share == 0:
        breaking = []
    infeasible_mass = math.fsum(weight for _, weight in breaking)
    if breaking and infeasible_mass == 0:
        raise ValueError("no eligibility rule can be broken with these weights")
    breaking = [(cell, weight / infeasible_mass) for cell, weight in breaking]
    share = infeasible_share if breaking else 0.0
    feasible_targets = _remaining_targets(targets, breaking, share)
    fitted = _fit(eligible, feasible_targets)
    cells = [cell for cell, _ in fitted] + [cell for cell, _ in breaking]
    probabilities = [(1 - share) * weight for _, weight in fitted]
    probabilities += [share * weight for _, weight in breaking]
    return SamplingPlan(tuple(cells), tuple(probabilities))


Weighted = list[tuple[Cell, float]]


def _candidate_cells(targets, age_ranges, rules) -> tuple[Weighted, Weighted]:
    """Eligible cells and cells breaking exactly one breakable rule, each weighted by how
    often independent draws (with ages uniform inside their group) would land there."""
    eligible: Weighted = []
    breaking: Weighted = []
    for condition, p_condition in targets["condition"].items():
        rule = rules.get(condition) or Rule(condition)
        for group, p_group in targets["age_group"].items():
            youngest, oldest = age_ranges[group]
            span = oldest - youngest + 1
            allowed = tuple(rule.allowed_years(group, youngest, oldest))
            whole_group = tuple(range(youngest, oldest + 1)) if not allowed else ()
            for sex, p_sex in targets["sex"].items():
                base = p_condition * p_group * p_sex / span
                if not rule.allows_sex(sex):
                    if SEX_RULE in rule.breakable:
                        _add(breaking, Cell(condition, group, sex, allowed, SEX_RULE), base)
                    continue
                _add(eligible, Cell(condition, group, sex, allowed, None), base)
                if AGE_RULE in rule.breakable:
                    _add(breaking, Cell(condition, group, sex, whole_group, AGE_RULE), base)
    return eligible, breaking


def _add(cells: Weighted, cell: Cell, weight_per_year: float) -> None:
    if cell.years:
        cells.append((cell, weight_per_year * len(cell.years)))


def _remaining_targets(targets, breaking: Weighted, share: float) -> dict[str, dict[str, float]]:
    """Targets for the eligible part, so that eligible + infeasible seeds together meet the
    configured shares (clipped at zero where the infeasible seeds alone exceed a target)."""
    remaining = {}
    for attribute in FITTED:
        used = _totals(
            [weight for _, weight in breaking], [getattr(c, attribute) for c, _ in breaking]
        )
        wanted = {
            value: max(target - share * used.get(value, 0.0), 0.0) / (1 - share)
            for value, target in targets[attribute].items()
        }
        total = math.fsum(wanted.values())
        remaining[attribute] = {value: weight / total for value, weight in wanted.items()}
    return remaining


def _fit(cells: Weighted, targets: dict[str, dict[str, float]]) -> Weighted:
    """Iterative proportional fitting: rescale the cells to each attribute's target in turn
    until every share matches. When the rules put a target out of reach it stops after
    MAX_FIT_ROUNDS at the closest table it found; the report shows what is left. Of all
    tables meeting the targets this is the one closest to independent draws."""
    weights = [weight for _, weight in cells]
    keys = {attribute: [getattr(cell, attribute) for cell, _ in cells] for attribute in FITTED}
    for _ in range(MAX_FIT_ROUNDS):
        for attribute in FITTED:
            weights = _rescaled(weights, keys[attribute], targets[attribute])
        if _worst_gap(weights, keys, targets) < FIT_TOLERANCE:
            break
    total = math.fsum(weights)
    return [(cell, weight / total) for (cell, _), weight in zip(cells, weights, strict=True)]


def _rescaled(weights: list[float], keys: list[str], target: dict[str, float]) -> list[float]:
    totals = _totals(weights, keys)
    factors = {key: target[key] / total if total > 0 else 0.0 for key, total in totals.items()}
    return [weight * factors[key] for weight, key in zip(weights, keys, strict=True)]


def _totals(weights: list[float], keys: list[str]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for weight, key in zip(weights, keys, strict=True):
        totals[key] = totals.get(key, 0.0) + weight
    return totals


def _worst_gap(weights, keys, targets) -> float:
    total = math.fsum(weights)
    gaps = []
    for attribute in FITTED:
        totals = _totals(weights, keys[attribute])
        gaps += [
            abs(totals.get(value, 0.0) / total - target)
            for value, target in targets[attribute].items()
        ]
    return max(gaps)


def unreachable_conditions(
    targets: dict[str, dict[str, float]],
    age_ranges: dict[str, tuple[int, int]],
    rules: dict[str, Rule],
) -> list[str]:
    """Conditions with a positive weight that no eligible patient with positive weight has."""
    eligible, _ = _candidate_cells(targets, age_ranges, rules)
    reachable = {cell.condition for cell, weight in eligible if weight > 0}
    return [c for c, p in targets["condition"].items() if p > 0 and c not in reachable]


def can_break_a_rule(
    targets: dict[str, dict[str, float]],
    age_ranges: dict[str, tuple[int, int]],
    rules: dict[str, Rule],
) -> bool:
    _, breaking = _candidate_cells(targets, age_ranges, rules)
    return any(weight > 0 for _, weight in breaking)
