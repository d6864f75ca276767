"""Simulated patient personalities: loading, validation and rendering for the patient prompt.

The data lives in benchmark/data/personalities.yaml so users can reword or re-level traits
without touching code. Every type must set a level on every dimension and every
(dimension, level) pair must have a description; anything else is a PersonalityError that
names the offending entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "personalities.yaml"

DIMENSIONS: tuple[str, ...] = (
    "cooperation",
    "anxiety",
    "health_literacy",
    "patience",
    "symptom_clarity",
    "urgency",
    "communication_style",
)
LEVELS: tuple[str, ...] = ("low", "medium", "high")
# One rendered trait line, as Personality.render() writes it: "- Health literacy (high): ...".
_RENDERED_TRAIT = re.compile(r"^- ([A-Z][a-z ]+) \((low|medium|high)\):", re.MULTILINE)


class PersonalityError(ValueError):
    """The personalities file is malformed or a requested type does not exist."""


@dataclass(frozen=True)
class Trait:
    dimension: str
    level: str
    description: str


@dataclass(frozen=True)
class Personality:
    name: str
    summary: str
    traits: tuple[Trait, ...]  # one per dimension, in DIMENSIONS order

    def level(self, dimension: str) -> str:
        return next(trait.level for trait in self.traits if trait.dimension == dimension)

    def render(self) -> str:
        """The persona lines written into the patient's system prompt."""
        lines = [f"Personality type: {self.name} ({self.summary})."]
        for trait in self.traits:
            label = trait.dimension.replace("_", " ").capitalize()
            lines.append(f"- {label} ({trait.level}): {trait.description}")
        return "\n".join(lines)


def levels_in_prompt(text: str) -> dict[str, str]:
    """The trait levels written into a patient prompt by Personality.render(): {dimension:
    level} for every dimension found, so a scripted patient can follow the prompt it is given."""
    levels = {}
    for label, level in _RENDERED_TRAIT.findall(text):
        dimension = label.lower().replace(" ", "_")
        if dimension in DIMENSIONS:
            levels.setdefault(dimension, level)
    return levels


@dataclass(frozen=True)
class PersonalityCatalog:
    version: str
    types: dict[str, Personality]

    def get(self, name: str) -> Personality:
        try:
            return self.types[name]
        except KeyError:
            known = ", ".join(sorted(self.types))
            raise PersonalityError(f"unknown personality {name!r}; known: {known}") from None


def parse_personalities(text: str) -> PersonalityCatalog:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise PersonalityError(f"personalities file is not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise PersonalityError("personalities file must be a mapping")
    unknown = set(data) - {"version", "dimensions", "types"}
    if unknown:
        raise PersonalityError(f"unknown top-level keys: {', '.join(sorted(unknown))}")
    descriptions = _descriptions(data.get("dimensions"))
    types = _types(data.get("types"), descriptions)
    return PersonalityCatalog(version=str(data.get("version", "")), types=types)


def load_personalities(path: Path = DEFAULT_PATH) -> PersonalityCatalog:
    return parse_personalities(Path(path).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def default_personalities() -> PersonalityCatalog:
    return load_personalities(DEFAULT_PATH)


def _descriptions(dimensions: Any) -> dict[tuple[str, str], str]:
    if not isinstance(dimensions, dict):
        raise PersonalityError("'dimensions' must map each dimension to its level descriptions")
    _require_exact_keys(dimensions, DIMENSIONS, "dimensions")
    descriptions = {}
    for dimension in DIMENSIONS:
        levels = dimensions[dimension]
        if not isinstance(levels, dict):
            raise PersonalityError(f"dimensions.{dimension} must map low/medium/high to text")
        _require_exact_keys(levels, LEVELS, f"dimensions.{dimension}")
        for level in LEVELS:
            text = levels[level]
            if not isinstance(text, str) or not text.strip():
                raise PersonalityError(f"dimensions.{dimension}.{level} needs a description")
            descriptions[(dimension, level)] = " ".join(text.split())
    return descriptions


def _types(types: Any, descriptions: dict[tuple[str, str], str]) -> dict[str, Personality]:
    if not isinstance(types, dict) or not types:
        raise PersonalityError("'types' must map each personality type to its levels")
    return {str(name): _personality(str(name), spec, descriptions) for name, spec in types.items()}


def _personality(name: str, spec: Any, descriptions: dict[tuple[str, str], str]) -> Personality:
    if not isinstance(spec, dict) or not isinstance(spec.get("levels"), dict):
        raise PersonalityError(f"types.{name} needs a 'levels' mapping")
    summary = spec.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise PersonalityError(f"types.{name} needs a one-line 'summary'")
    levels = spec["levels"]
    _require_exact_keys(levels, DIMENSIONS, f"types.{name}.levels")
    traits = []
    for dimension in DIMENSIONS:
        level = levels[dimension]
        if level not in LEVELS:
            raise PersonalityError(
                f"types.{name}.levels.{dimension} is {level!r}; use one of {', '.join(LEVELS)}"
            )
        traits.append(Trait(dimension, level, descriptions[(dimension, level)]))
    return Personality(name=name, summary=summary.strip(), traits=tuple(traits))


def _require_exact_keys(mapping: dict, expected: tuple[str, ...], where: str) -> None:
    missing = [key for key in expected if key not in mapping]
    extra = sorted(str(key) for key in mapping if key not in expected)
    if missing:
        raise PersonalityError(f"{where} is missing: {', '.join(missing)}")
    if extra:
        raise PersonalityError(f"{where} has unknown entries: {', '.join(extra)}")
