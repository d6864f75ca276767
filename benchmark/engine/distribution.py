"""The seed distribution file: load, validate and describe it.

A distribution is data the user edits (YAML, or JSON which YAML also reads). This module is
the one place that reads it. Every problem found is reported with the field path and the line
it sits on, all at once, so a user can fix a file in one pass.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml

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
TOP_LEVEL_FIELDS = ("name", "version", "attributes", "age_ranges", "gender_identity")
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

    def _subcategory_shares(self) -> dict[str, float]:
        categories = self.probabilities("task_category")
        return {
            subcategory: categories[category] * probability
            for category, table in self.subcategories
            for subcategory, probability in table
        }

    def _gender_identity_shares(self) -> dict[str, float]:
        sexes, genders = self.probabilities("sex"), self.probabilities("gender")
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
        return {
            "name": self.name,
            "version": self.version,
            "attributes": attributes,
            "age_ranges": {group: [low, high] for group, low, high in self.age_ranges},
            "gender_identity": identities,
        }

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
        root_node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
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
        if self.problems:
            return None
        return Distribution(name, version, weights, subcategories, age_ranges, identities)

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


def _is_age_range(bounds: Any) -> bool:
    return (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(age, int) and not isinstance(age, bool) for age in bounds)
        and 0 <= bounds[0] <= bounds[1] <= OLDEST_AGE
    )


def _dotted(path: KeyPath) -> str:
    return ".".join(str(part) for part in path)
