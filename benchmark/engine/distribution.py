"""The seed distribution file: load, validate and describe it.

A distribution is data the user edits (YAML, or JSON which YAML also reads). This module is
the one place that reads it. Every problem found is reported with the field path and the line
it sits on, all at once, so a user can fix a file in one pass.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml

from benchmark.engine import eligibility
from benchmark.engine.eligibility import AGE_RULE, SEX_RULE, Rule, SamplingPlan, build_plan
from common import safe_yaml

DEFAULT_DISTRIBUTION_PATH = (
    Path(__file__).resolve().parent.parent / "data" / "distributions" / "default.yaml"
)

# Attributes drawn directly from a weight table, in sampling order.
WEIGHTED_ATTRIBUTES = (
    "condition",
    "severity",
    "task_category",
    "age_group",
    "sex",
    "gender",
    "care_preference",
    "personality",
)
# Drawn independently of each other and of the condition / age group / sex cell.
INDEPENDENT_ATTRIBUTES = tuple(a for a in WEIGHTED_ATTRIBUTES if a not in eligibility.FITTED)
# Every key of the `attributes` section: the weighted ones plus the category-dependent one.
FILE_ATTRIBUTES = WEIGHTED_ATTRIBUTES + ("task_subcategory",)
# Seed attributes in the order reports list them (gender_identity is derived).
SEED_ATTRIBUTES = (
    "condition",
    "severity",
    "task_category",
    "task_subcategory",
    "age_group",
    "sex",
    "gender",
    "gender_identity",
    "care_preference",
    "personality",
)
TOP_LEVEL_FIELDS = (
    "name",
    "version",
    "attributes",
    "age_ranges",
    "gender_identity",
    "eligibility",
    "infeasible_share",
)
RULE_FIELDS = ("sex", "age_groups", "ages", "breakable")
# The paper keeps about 2% of seeds implausible on purpose; a file with eligibility rules
# gets this share unless it sets its own.
DEFAULT_INFEASIBLE_SHARE = 0.02
MAX_INFEASIBLE_SHARE = 0.5
# Probabilities are rounded for the fingerprint so that a distribution written by to_yaml()
# and loaded again (renormalised, last-bit float noise) keeps its fingerprint.
FINGERPRINT_DECIMALS = 9
OLDEST_AGE = 120

KeyPath = tuple[str | int, ...]
Weights = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}, " if self.line is not None else ""
        return f"{where}{self.path or '(top level)'}: {self.message}"


class DistributionError(ValueError):
    """The distribution file is invalid. `problems` lists every fault found."""

    def __init__(self, problems: list[Problem], *, source: str):
        self.problems = problems
        self.source = source
        listed = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"invalid distribution {source}:\n{listed}")


@dataclass(frozen=True)
class Distribution:
    """A validated distribution; every weight table is normalised to probabilities."""

    name: str
    version: str
    weights: tuple[tuple[str, Weights], ...]  # attribute -> probabilities, file order
    subcategories: tuple[tuple[str, Weights], ...]  # task category -> probabilities
    age_ranges: tuple[tuple[str, int, int], ...]  # (age group, youngest, oldest)
    gender_identities: tuple[tuple[str, str, str], ...]  # (sex, gender, identity)
    # Eligibility rule per condition, in condition order; empty when the file has none.
    rules: tuple[Rule, ...]
    infeasible_share: float

    def probabilities(self, attribute: str) -> dict[str, float]:
        return dict(dict(self.weights)[attribute])

    def subcategory_probabilities(self, category: str) -> dict[str, float]:
        return dict(dict(self.subcategories)[category])

    def age_range(self, age_group: str) -> tuple[int, int]:
        for group, youngest, oldest in self.age_ranges:
            if group == age_group:
                return youngest, oldest
        raise KeyError(age_group)

    def gender_identity(self, sex: str, gender: str) -> str:
        for known_sex, known_gender, identity in self.gender_identities:
            if (known_sex, known_gender) == (sex, gender):
                return identity
        raise KeyError((sex, gender))

    def rule(self, condition: str) -> Rule:
        return self._rules_by_condition.get(condition) or Rule(condition)

    @cached_property
    def _rules_by_condition(self) -> dict[str, Rule]:
        return {rule.condition: rule for rule in self.rules}

    def broken_rules(self, seed: dict[str, Any]) -> list[str]:
        """The eligibility rules a seed's condition, sex and age break ([] if none)."""
        return self.rule(seed["condition"]).broken(seed["sex"], seed["age_group"], seed["age"])

    @cached_property
    def plan(self) -> SamplingPlan:
        """The joint (condition, age group, sex) table the sampler draws from."""
        return build_plan(
            {attribute: self.probabilities(attribute) for attribute in eligibility.FITTED},
            {group: (low, high) for group, low, high in self.age_ranges},
            self._rules_by_condition,
            self.infeasible_share,
        )

    def target_shares(self) -> list[tuple[str, str, float]]:
        """(attribute, value, expected share of all seeds), every seed attribute included."""
        shares = []
        for attribute in SEED_ATTRIBUTES:
            if attribute == "task_subcategory":
                table = self._subcategory_shares()
            elif attribute == "gender_identity":
                table = self._gender_identity_shares()
            else:
                table = self.probabilities(attribute)
            shares.extend((attribute, value, share) for value, share in table.items())
        return shares

    def expected_shares(self) -> list[tuple[str, str, float]]:
        """Like target_shares, as the sampler realises them once eligibility is applied."""
        fitted = {attribute: self.plan.shares(attribute) for attribute in eligibility.FITTED}
        shares = []
        for attribute, value, target in self.target_shares():
            if attribute in fitted:
                share = fitted[attribute].get(value, 0.0)
            elif attribute == "gender_identity":
                share = self._gender_identity_shares(fitted["sex"])[value]
            else:
                share = target
            shares.append((attribute, value, share))
        return shares

    def _subcategory_shares(self) -> dict[str, float]:
        categories = self.probabilities("task_category")
        return {
            subcategory: categories[category] * probability
            for category, table in self.subcategories
            for subcategory, probability in table
        }

    def _gender_identity_shares(self, sexes: dict[str, float] | None = None) -> dict[str, float]:
        sexes, genders = sexes or self.probabilities("sex"), self.probabilities("gender")
        shares: dict[str, float] = {}
        for sex, gender, identity in self.gender_identities:
            shares[identity] = shares.get(identity, 0.0) + sexes[sex] * genders[gender]
        return shares

    def to_dict(self) -> dict[str, Any]:
        """The file's shape, with probabilities in place of the original weights."""
        attributes: dict[str, Any] = {name: dict(table) for name, table in self.weights}
        attributes["task_subcategory"] = {
            category: dict(table) for category, table in self.subcategories
        }
        identities: dict[str, dict[str, str]] = {}
        for sex, gender, identity in self.gender_identities:
            identities.setdefault(sex, {})[gender] = identity
        data = {
            "name": self.name,
            "version": self.version,
            "attributes": attributes,
            "age_ranges": {group: [low, high] for group, low, high in self.age_ranges},
            "gender_identity": identities,
        }
        if self.rules:  # a file without rules keeps the fingerprint it had before they existed
            data["eligibility"] = {rule.condition: rule.to_dict() for rule in self.rules}
            data["infeasible_share"] = self.infeasible_share
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the canonical JSON: the version of what this distribution samples.

        Value order is kept (it decides which value a random draw lands on), keys are not
        re-sorted, and probabilities are rounded so float noise does not change the hash.
        """
        canonical = json.dumps(_rounded(self.to_dict()), separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, FINGERPRINT_DECIMALS)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def load_distribution(path: str | Path) -> Distribution:
    path = Path(path)
    return parse_distribution(path.read_text(encoding="utf-8"), source=str(path))


@lru_cache(maxsize=1)
def default_distribution() -> Distribution:
    return load_distribution(DEFAULT_DISTRIBUTION_PATH)


def parse_distribution(text: str, *, source: str = "<text>") -> Distribution:
    """Parse and validate distribution text; raise DistributionError listing every problem."""
    try:
        data = safe_yaml.safe_load(text)  # first: it refuses alias bombs before anything walks them
        root_node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise DistributionError([_syntax_problem(error)], source=source) from error
    reader = _Reader(_line_index(root_node))
    distribution = reader.read(data)
    if reader.problems:
        raise DistributionError(reader.problems, source=source)
    assert distribution is not None  # no problems means every part was read
    return distribution


def _syntax_problem(error: yaml.YAMLError) -> Problem:
    mark = getattr(error, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    reason = getattr(error, "problem", None) or str(error)
    return Problem("", line, f"invalid YAML: {reason}")


@dataclass
class _LineIndex:
    lines: dict[KeyPath, int]
    duplicates: list[tuple[KeyPath, int]]

    def line_of(self, path: KeyPath) -> int | None:
        """Line of `path`, or of its nearest ancestor present in the file."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def _line_index(root: yaml.Node | None) -> _LineIndex:
    index = _LineIndex({}, [])
    if root is not None:
        _index_node(root, (), index)
    return index


def _index_node(node: yaml.Node, path: KeyPath, index: _LineIndex) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = path + (str(key_node.value),)
            line = key_node.start_mark.line + 1
            if child in index.lines:
                index.duplicates.append((child, line))
            index.lines[child] = line
            _index_node(value_node, child, index)
    elif isinstance(node, yaml.SequenceNode):
        for position, item in enumerate(node.value):
            index.lines[path + (position,)] = item.start_mark.line + 1
            _index_node(item, path + (position,), index)


class _Reader:
    """Walks the loaded data, collecting problems instead of stopping at the first."""

    def __init__(self, index: _LineIndex):
        self.index = index
        self.problems: list[Problem] = []
        for path, line in index.duplicates:
            self.problems.append(Problem(_dotted(path), line, "duplicate key"))

    def problem(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(_dotted(path), self.index.line_of(path), message))

    def read(self, data: Any) -> Distribution | None:
        if not isinstance(data, dict):
            self.problem((), "the file must be a mapping with name, version and attributes")
            return None
        self._reject_unknown((), data, TOP_LEVEL_FIELDS, "field")
        name = self._text(data, "name")
        version = self._version(data)
        weights, subcategories = self._attributes(data.get("attributes"))
        age_groups = [value for value, _ in dict(weights).get("age_group", ())]
        age_ranges = self._age_ranges(data.get("age_ranges"), age_groups)
        identities = self._gender_identities(
            data.get("gender_identity"),
            [value for value, _ in dict(weights).get("sex", ())],
            [value for value, _ in dict(weights).get("gender", ())],
        )
        rules = self._eligibility(data.get("eligibility"), dict(weights), age_ranges)
        share = self._infeasible_share(data, rules)
        if self.problems:
            return None
        self._check_reachable(dict(weights), age_ranges, rules, share)
        if self.problems:
            return None
        return Distribution(
            name, version, weights, subcategories, age_ranges, identities, rules, share
        )

    def _reject_unknown(self, path: KeyPath, data: dict, known: tuple[str, ...], kind: str):
        for key in data:
            if key not in known:
                self.problem(
                    path + (str(key),), f"unknown {kind} {key!r} (known: {', '.join(known)})"
                )

    def _text(self, data: dict, key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            self.problem((key,), f"missing or empty {key!r}; give it a non-empty text value")
            return ""
        return value

    def _version(self, data: dict) -> str:
        value = data.get("version")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
            self.problem(("version",), "missing 'version'; give it a text or number value")
            return ""
        return str(value)

    def _attributes(self, data: Any) -> tuple[tuple, tuple]:
        path: KeyPath = ("attributes",)
        if not isinstance(data, dict):
            self.problem(path, "missing 'attributes' mapping")
            return (), ()
        self._reject_unknown(path, data, FILE_ATTRIBUTES, "attribute")
        weights = []
        for attribute in WEIGHTED_ATTRIBUTES:
            if attribute not in data:
                self.problem(path + (attribute,), f"missing attribute {attribute!r}")
                continue
            table = self._weights(path + (attribute,), data[attribute])
            if table:
                weights.append((attribute, table))
        categories = [value for value, _ in dict(weights).get("task_category", ())]
        subcategories = self._subcategories(data.get("task_subcategory"), categories)
        return tuple(weights), subcategories

    def _weights(self, path: KeyPath, data: Any) -> Weights:
        if not isinstance(data, dict) or not data:
            self.problem(path, "needs a non-empty mapping of value: weight")
            return ()
        valid = True
        for value, weight in data.items():
            valid &= self._check_weight(path + (str(value),), value, weight)
        if not valid:
            return ()
        total = sum(data.values())
        if total == 0:
            self.problem(path, "all weights are zero; at least one must be positive")
            return ()
        return tuple((value, weight / total) for value, weight in data.items())

    def _check_weight(self, path: KeyPath, value: Any, weight: Any) -> bool:
        if not isinstance(value, str):
            self.problem(path, f"value name {value!r} must be text; put it in quotes")
            return False
        numeric = isinstance(weight, (int, float)) and not isinstance(weight, bool)
        if not numeric or not math.isfinite(weight):
            self.problem(path, f"weight must be a number, got {weight!r}")
            return False
        if weight < 0:
            self.problem(path, f"weight must not be negative, got {weight!r}")
            return False
        return True

    def _subcategories(self, data: Any, categories: list[str]) -> tuple:
        path: KeyPath = ("attributes", "task_subcategory")
        if not isinstance(data, dict):
            self.problem(path, "missing attribute 'task_subcategory' (category: {name: weight})")
            return ()
        for category in data:
            if category not in categories:
                self.problem(path + (str(category),), f"unknown task category {category!r}")
        tables = []
        seen: set[str] = set()
        for category in categories:
            if category not in data:
                self.problem(path, f"task category {category!r} has no subcategories")
                continue
            table = self._weights(path + (category,), data[category])
            for subcategory, _ in table:
                if subcategory in seen:
                    self.problem(path + (category, subcategory), "subcategory name is used twice")
                seen.add(subcategory)
            tables.append((category, table))
        return tuple(tables)

    def _age_ranges(self, data: Any, age_groups: list[str]) -> tuple:
        path: KeyPath = ("age_ranges",)
        if not age_groups:
            return ()  # the age_group attribute itself is faulty and already reported
        if not isinstance(data, dict):
            self.problem(path, "missing 'age_ranges' mapping (age group: [youngest, oldest])")
            return ()
        self._reject_unknown(path, data, tuple(age_groups), "age group")
        ranges = []
        for group in age_groups:
            bounds = data.get(group)
            if not _is_age_range(bounds):
                self.problem(
                    path + (group,),
                    f"needs [youngest, oldest] whole years within 0-{OLDEST_AGE}, got {bounds!r}",
                )
                continue
            ranges.append((group, bounds[0], bounds[1]))
        return tuple(ranges)

    def _gender_identities(self, data: Any, sexes: list[str], genders: list[str]) -> tuple:
        path: KeyPath = ("gender_identity",)
        if not sexes or not genders:
            return ()  # the sex or gender attribute is faulty and already reported
        if not isinstance(data, dict):
            self.problem(path, "missing 'gender_identity' mapping (sex: {gender: identity})")
            return ()
        self._reject_unknown(path, data, tuple(sexes), "sex")
        identities = []
        for sex in sexes:
            row = data.get(sex)
            if not isinstance(row, dict):
                self.problem(path + (sex,), "missing mapping of gender: identity")
                continue
            self._reject_unknown(path + (sex,), row, tuple(genders), "gender")
            for gender in genders:
                identity = row.get(gender)
                if not isinstance(identity, str) or not identity:
                    self.problem(path + (sex, gender), "missing derived identity for this pair")
                    continue
                identities.append((sex, gender, identity))
        return tuple(identities)

    def _eligibility(self, data: Any, weights: dict, age_ranges: tuple) -> tuple[Rule, ...]:
        """One rule per condition. Optional as a whole; once present, every condition needs
        an entry (`{}` when anyone can have it) so none is left open by oversight."""
        path: KeyPath = ("eligibility",)
        conditions = [value for value, _ in weights.get("condition", ())]
        if data is None or not conditions or not age_ranges or "sex" not in weights:
            return ()  # absent, or the attributes it refers to are faulty and already reported
        if not isinstance(data, dict):
            self.problem(path, "needs a mapping of condition: {sex, age_groups, ages, breakable}")
            return ()
        for condition in data:
            if condition not in conditions:
                self.problem(
                    path + (str(condition),),
                    f"unknown condition {condition!r}; list conditions of attributes.condition",
                )
        rules = []
        for condition in conditions:
            if condition not in data:
                self.problem(
                    path,
                    f"condition {condition!r} has no eligibility entry; add "
                    f"'{condition}: {{}}' if any patient can have it",
                )
                continue
            rule = self._rule(path + (condition,), condition, data[condition], weights, age_ranges)
            if rule is not None:
                rules.append(rule)
        return tuple(rules)

    def _rule(
        self, path: KeyPath, condition: str, data: Any, weights: dict, age_ranges: tuple
    ) -> Rule | None:
        if data is None:
            return Rule(condition)
        if not isinstance(data, dict):
            self.problem(
                path, f"needs a mapping with any of {', '.join(RULE_FIELDS)} ({{}} for none)"
            )
            return None
        self._reject_unknown(path, data, RULE_FIELDS, "rule field")
        sexes = self._choices(path + ("sex",), data, "sex", [v for v, _ in weights["sex"]])
        groups = self._choices(
            path + ("age_groups",), data, "age_groups", [group for group, _, _ in age_ranges]
        )
        ages = data.get("ages")
        if "ages" in data and not _is_age_range(ages):
            self.problem(
                path + ("ages",),
                f"needs [youngest, oldest] whole years within 0-{OLDEST_AGE}, got {ages!r}",
            )
            return None
        if sexes is False or groups is False:
            return None
        rule = Rule(condition, sexes, groups, tuple(ages) if ages is not None else None)
        breakable = self._breakable(path + ("breakable",), data, rule, age_ranges)
        return None if breakable is False else replace(rule, breakable=breakable or ())

    def _breakable(self, path: KeyPath, data: dict, rule: Rule, age_ranges: tuple):
        """The rules an infeasible seed may break: ones this rule has, and for age, only
        when some age group is excluded entirely."""
        kinds = self._choices(path, data, "breakable", [SEX_RULE, AGE_RULE])
        if not kinds:
            return kinds
        if any(kind not in rule.kinds for kind in kinds):
            self.problem(path, f"can only list rules this condition has: {list(rule.kinds)}")
            return False
        if AGE_RULE in kinds and not any(
            not rule.allowed_years(group, low, high) for group, low, high in age_ranges
        ):
            self.problem(
                path,
                "'age' needs an age group the rule excludes entirely (infeasible seeds are "
                "drawn from such groups, never just past a boundary)",
            )
            return False
        return kinds

    def _choices(self, path: KeyPath, data: dict, key: str, known: list[str]):
        """The listed values (None when the key is absent, False when faulty)."""
        if key not in data:
            return None
        values = data[key]
        if not isinstance(values, list) or not values:
            self.problem(path, f"needs a non-empty list, e.g. [{known[0]}]")
            return False
        unknown = [value for value in values if value not in known]
        if unknown:
            self.problem(
                path, f"unknown value(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
            )
            return False
        return tuple(values)

    def _infeasible_share(self, data: dict, rules: tuple[Rule, ...]) -> float:
        if "infeasible_share" not in data:
            return DEFAULT_INFEASIBLE_SHARE if rules else 0.0
        share = data["infeasible_share"]
        numeric = isinstance(share, (int, float)) and not isinstance(share, bool)
        if not numeric or not 0 <= share <= MAX_INFEASIBLE_SHARE:
            self.problem(
                ("infeasible_share",),
                f"needs a fraction between 0 and {MAX_INFEASIBLE_SHARE} (0.02 is 2%), "
                f"got {share!r}",
            )
            return 0.0
        if share > 0 and "eligibility" not in data:
            self.problem(
                ("infeasible_share",),
                "needs eligibility rules to break; add an 'eligibility' section or set it to 0",
            )
        return float(share)

    def _check_reachable(
        self, weights: dict, age_ranges: tuple, rules: tuple[Rule, ...], share: float
    ) -> None:
        """Every weighted condition needs an eligible patient, and an infeasible share needs
        a rule that weighted attributes can break."""
        if not rules:
            return
        targets = {attribute: dict(weights[attribute]) for attribute in eligibility.FITTED}
        ranges = {group: (low, high) for group, low, high in age_ranges}
        by_condition = {rule.condition: rule for rule in rules}
        for condition in eligibility.unreachable_conditions(targets, ranges, by_condition):
            self.problem(
                ("eligibility", condition),
                "no patient this rule allows has a positive weight (check its sexes, age "
                "groups and ages against the weights)",
            )
        if share > 0 and not eligibility.can_break_a_rule(targets, ranges, by_condition):
            self.problem(
                ("infeasible_share",),
                "no eligibility rule can be broken: mark a rule 'breakable' (with a weighted "
                "sex or age group outside it) or set infeasible_share to 0",
            )


def _is_age_range(bounds: Any) -> bool:
    return (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(age, int) and not isinstance(age, bool) for age in bounds)
        and 0 <= bounds[0] <= bounds[1] <= OLDEST_AGE
    )


def _dotted(path: KeyPath) -> str:
    return ".".join(str(part) for part in path)
