"""Which model family a model string belongs to, from alignment/data/model_families.yaml.

The judges' self-preference diagnostic asks whether a judge scores agents of its own family
more kindly than clinicians do. The file maps model names (shell-style patterns) and providers
to families; the offline scripts belong to none (they are not models), nor does a model no
pattern matches. Read and checked here on every call: a malformed file is refused with the
entry and the problem named.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

from common.safe_yaml import safe_load
from llm.engine.generation import base_model

FAMILIES_FILE = Path(__file__).resolve().parents[1] / "data" / "model_families.yaml"
SCRIPTED = "scripted"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Family:
    name: str
    vendor: str
    models: tuple[str, ...]
    providers: tuple[str, ...]


@dataclass(frozen=True)
class FamilyTable:
    families: tuple[Family, ...]
    scripted_providers: tuple[str, ...]

    def family_of(self, model: str) -> str | None:
        """The family name of a model string; None for a scripted or an unknown model."""
        return self.classify(model)[0]

    def classify(self, model: str) -> tuple[str | None, str]:
        """(family or None, why): why is the family name, SCRIPTED or UNKNOWN."""
        provider, _, name = base_model(model).partition("/")  # settings say nothing of it
        if provider in self.scripted_providers:
            return None, SCRIPTED
        name = name.lower()
        for family in self.families:
            if any(fnmatchcase(name, pattern) for pattern in family.models):
                return family.name, family.name
        for family in self.families:
            if provider in family.providers:
                return family.name, family.name
        return None, UNKNOWN

    def same_family(self, judge: str, agent: str) -> bool | None:
        """True / False when both have a family; None when either has none."""
        first, second = self.family_of(judge), self.family_of(agent)
        if first is None or second is None:
            return None
        return first == second


def load_families(path: Path = FAMILIES_FILE) -> FamilyTable:
    """The file read on every call (an edit counts at once); parsed once per distinct text,
    since a study report asks for it once per rubric and parsing YAML is slow."""
    return _parsed(path.read_text(encoding="utf-8"), path.name)


@lru_cache(maxsize=4)
def _parsed(text: str, source: str) -> FamilyTable:
    return parse_families(text, source=source)  # a malformed file raises: nothing cached


def parse_families(text: str, *, source: str = "model families") -> FamilyTable:
    data = safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("families"), list):
        raise ValueError(f"{source}: needs a `families` list")
    families, seen = [], set()
    for number, entry in enumerate(data["families"], start=1):
        where = f"{source}: family {number}"
        if not isinstance(entry, dict) or not str(entry.get("name", "")).strip():
            raise ValueError(f"{where} needs a name")
        name = str(entry["name"]).strip()
        if name in seen:
            raise ValueError(f"{where}: the name {name!r} is used twice")
        seen.add(name)
        models = _strings(entry.get("models", []), f"{where} ({name}) `models`")
        providers = _strings(entry.get("providers", []), f"{where} ({name}) `providers`")
        if not models and not providers:
            raise ValueError(f"{where} ({name}) matches nothing: give `models` or `providers`")
        families.append(Family(name, str(entry.get("vendor", "")), models, providers))
    scripted = _strings(data.get("scripted_providers", []), f"{source}: `scripted_providers`")
    return FamilyTable(tuple(families), scripted)


def _strings(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{where} must be a list of non-empty strings")
    return tuple(v.strip().lower() for v in value)
