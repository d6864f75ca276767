"""Rubric files: the one place where rubric YAML is read, validated and fingerprinted.

A rubric lives in one YAML file under jury/data/rubrics/ (or in YAML text a researcher edits in
the web UI). Two kinds exist: `dimension` rubrics, scored 1-5 by the LLM jury and weighted into
the aggregate, and `realism` rubrics, scored by clinicians only. Every score records the rubric
version and fingerprint, so an edited text can never be mistaken for the one it replaced.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from common import safe_yaml

RUBRICS_DIR = Path(__file__).resolve().parent.parent / "data" / "rubrics"

SCORES = (1, 2, 3, 4, 5)
KINDS = ("dimension", "realism")
TRACKS = ("clinical", "operational")

_COMMON_FIELDS = {"id", "name", "code", "version", "kind", "order", "task", "levels"}
_DIMENSION_FIELDS = _COMMON_FIELDS | {
    "weight",
    "track",
    "applicability",
    "sub_dimensions",
    "distinctions",
    "forced_fail",
}


class RubricError(ValueError):
    """A rubric that cannot be used; the message names the offending field."""


@dataclass(frozen=True)
class Level:
    score: int
    label: str
    description: str


@dataclass(frozen=True)
class SubDimension:
    name: str
    criteria: tuple[str, ...]


@dataclass(frozen=True)
class Applicability:
    rule: str
    default_score: int


@dataclass(frozen=True)
class Rubric:
    id: str
    name: str
    code: str
    version: int
    kind: str
    order: int
    task: str
    levels: tuple[Level, ...]
    # Dimension rubrics only; realism rubrics leave these empty.
    weight: float | None = None
    track: str | None = None
    applicability: Applicability | None = None
    sub_dimensions: tuple[SubDimension, ...] = ()
    distinctions: tuple[str, ...] = ()
    forced_fail: tuple[str, ...] = ()

    @property
    def judged(self) -> bool:
        return self.kind == "dimension"

    @property
    def criterion_count(self) -> int:
        return sum(len(sub.criteria) for sub in self.sub_dimensions)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the content (comments and layout do not count)."""
        canonical = json.dumps(
            self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_rubric(text: str) -> Rubric:
    """Read and validate one rubric from YAML text; RubricError names the field at fault."""
    try:
        data = safe_yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise RubricError(f"rubric YAML could not be read: {error}") from error
    if not isinstance(data, dict):
        raise RubricError("rubric YAML must be a mapping of fields at the top level")
    return _rubric_from(data)


def load_rubrics(path: Path | str = RUBRICS_DIR) -> dict[str, Rubric]:
    """Every rubric in a folder, keyed by id: dimensions first, each kind in `order`."""
    rubrics: dict[str, Rubric] = {}
    for file in sorted(Path(path).glob("*.yaml")):
        try:
            rubric = parse_rubric(file.read_text(encoding="utf-8"))
        except RubricError as error:
            raise RubricError(f"{file.name}: {error}") from error
        if rubric.id != file.stem:
            raise RubricError(f"{file.name}: field 'id' is {rubric.id!r}; it must match the file")
        rubrics[rubric.id] = rubric
    if not rubrics:
        raise RubricError(f"no rubric files (*.yaml) in {path}")
    _check_unique_codes(rubrics.values())
    ordered = sorted(rubrics.values(), key=lambda r: (KINDS.index(r.kind), r.order))
    return {rubric.id: rubric for rubric in ordered}


def dimension_rubrics(rubrics: Mapping[str, Rubric]) -> dict[str, Rubric]:
    return {rubric_id: rubric for rubric_id, rubric in rubrics.items() if rubric.judged}


def default_weights(rubrics: Mapping[str, Rubric]) -> dict[str, float]:
    return {rubric_id: rubric.weight for rubric_id, rubric in dimension_rubrics(rubrics).items()}


def _check_unique_codes(rubrics) -> None:
    seen: dict[str, str] = {}
    for rubric in rubrics:
        if rubric.code in seen:
            raise RubricError(
                f"rubrics {seen[rubric.code]!r} and {rubric.id!r} share the code {rubric.code!r}"
            )
        seen[rubric.code] = rubric.id


def _rubric_from(data: dict[str, Any]) -> Rubric:
    kind = _text(data, "kind")
    if kind not in KINDS:
        raise RubricError(f"field 'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
    allowed = _DIMENSION_FIELDS if kind == "dimension" else _COMMON_FIELDS
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise RubricError(f"unknown field(s) for a {kind} rubric: {', '.join(map(str, unknown))}")
    common = {
        "id": _text(data, "id"),
        "name": _text(data, "name"),
        "code": _text(data, "code"),
        "version": _integer(data, "version", minimum=1),
        "kind": kind,
        "order": _integer(data, "order", minimum=0),
        "task": _text(data, "task"),
        "levels": _levels(data),
    }
    if kind == "realism":
        return Rubric(**common)
    return Rubric(
        **common,
        weight=_positive_number(data, "weight"),
        track=_track(data),
        applicability=_applicability(data),
        sub_dimensions=_sub_dimensions(data),
        distinctions=_text_list(data, "distinctions", allow_empty=True),
        forced_fail=_text_list(data, "forced_fail"),
    )


def _levels(data: dict[str, Any]) -> tuple[Level, ...]:
    raw = _mapping(data, "levels")
    by_score = {_level_key(key): value for key, value in raw.items()}
    if sorted(by_score) != list(SCORES):
        raise RubricError(
            f"field 'levels' must define exactly the scores 1-5, found {sorted(by_score)}"
        )
    levels = []
    for score in SCORES:
        entry = by_score[score]
        if not isinstance(entry, dict):
            raise RubricError(f"field 'levels.{score}' must be a mapping with label, description")
        levels.append(
            Level(
                score=score,
                label=_text(entry, "label", path=f"levels.{score}."),
                description=_text(entry, "description", path=f"levels.{score}."),
            )
        )
    return tuple(levels)


def _level_key(key: Any) -> int:
    # YAML reads `1:` as an int but `"1":` as a string; both mean the same level.
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().isdigit():
        return int(key)
    raise RubricError(f"field 'levels' has a key {key!r} that is not a score from 1 to 5")


def _applicability(data: dict[str, Any]) -> Applicability:
    raw = _mapping(data, "applicability")
    default = _integer(raw, "default_score", minimum=1, path="applicability.")
    if default not in SCORES:
        raise RubricError("field 'applicability.default_score' must be a score from 1 to 5")
    return Applicability(rule=_text(raw, "rule", path="applicability."), default_score=default)


def _sub_dimensions(data: dict[str, Any]) -> tuple[SubDimension, ...]:
    raw = data.get("sub_dimensions")
    if not isinstance(raw, list) or not raw:
        raise RubricError("field 'sub_dimensions' must be a non-empty list")
    subs = []
    for index, entry in enumerate(raw):
        path = f"sub_dimensions[{index}]."
        if not isinstance(entry, dict):
            raise RubricError(f"field 'sub_dimensions[{index}]' must be a mapping")
        subs.append(
            SubDimension(
                name=_text(entry, "name", path=path),
                criteria=_text_list(entry, "criteria", path=path),
            )
        )
    names = [sub.name for sub in subs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RubricError(f"field 'sub_dimensions' repeats the name(s): {', '.join(duplicates)}")
    return tuple(subs)


def _track(data: dict[str, Any]) -> str:
    track = _text(data, "track")
    if track not in TRACKS:
        raise RubricError(f"field 'track' must be one of {', '.join(TRACKS)}, not {track!r}")
    return track


def _mapping(data: dict[str, Any], key: str) -> dict[Any, Any]:
    value = data.get(key)
    if not isinstance(value, dict) or not value:
        raise RubricError(f"field {key!r} must be a non-empty mapping")
    return value


def _text(data: dict[str, Any], key: str, *, path: str = "") -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RubricError(f"field '{path}{key}' must be a non-empty string")
    return " ".join(value.split())


def _text_list(
    data: dict[str, Any], key: str, *, path: str = "", allow_empty: bool = False
) -> tuple[str, ...]:
    value = data.get(key, [] if allow_empty else None)
    if not isinstance(value, list) or (not value and not allow_empty):
        raise RubricError(f"field '{path}{key}' must be a non-empty list of strings")
    items = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise RubricError(f"field '{path}{key}[{index}]' must be a non-empty string")
        items.append(" ".join(item.split()))
    if len(set(items)) != len(items):
        raise RubricError(f"field '{path}{key}' lists the same text twice")
    return tuple(items)


def _integer(data: dict[str, Any], key: str, *, minimum: int, path: str = "") -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RubricError(f"field '{path}{key}' must be an integer >= {minimum}")
    return value


def _positive_number(data: dict[str, Any], key: str) -> float:
    value = data.get(key)
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or value <= 0:
        raise RubricError(f"field {key!r} must be a positive number")
    return float(value)
