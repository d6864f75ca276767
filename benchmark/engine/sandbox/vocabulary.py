"""Controlled vocabularies of the sandbox: provider specialties and appointment types.

Specialties are data (benchmark/data/specialties.yaml), loaded and validated here once.
Appointment types are part of the tool protocol itself, so they live in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

SPECIALTIES_FILE = Path(__file__).resolve().parents[2] / "data" / "specialties.yaml"

APPOINTMENT_TYPES = ("in-person", "telehealth", "phone")
MEDICATION_STATUSES = ("active", "under_renewal", "past")

_MEDICATION_STATUS_SYNONYMS = {
    "pending renewal": "under_renewal",
    "pending": "under_renewal",
    "renewal pending": "under_renewal",
    "current": "active",
    "discontinued": "past",
    "inactive": "past",
    "expired": "past",
    "stopped": "past",
}

# Keys are normalised with _normalise_words: lower case, "-" and "_" read as spaces.
_APPOINTMENT_TYPE_SYNONYMS = {
    "in person": "in-person",
    "inperson": "in-person",
    "office": "in-person",
    "office visit": "in-person",
    "clinic": "in-person",
    "telehealth": "telehealth",
    "virtual": "telehealth",
    "video": "telehealth",
    "video call": "telehealth",
    "video visit": "telehealth",
    "telemedicine": "telehealth",
    "phone": "phone",
    "phone call": "phone",
    "call": "phone",
    "telephone": "phone",
}


@dataclass(frozen=True)
class Specialty:
    name: str
    synonyms: tuple[str, ...]
    keywords: tuple[str, ...]
    # Inclusive patient age range for which this specialty may act as PCP; None if never.
    primary_care_ages: tuple[int, int] | None


@dataclass(frozen=True)
class Vocabulary:
    specialties: tuple[Specialty, ...]
    primary_care_aliases: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(specialty.name for specialty in self.specialties)

    @property
    def primary_care_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specialties if s.primary_care_ages is not None)


def _normalise_words(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").replace("-", " ").split())


def normalise_appointment_type(text: str) -> str | None:
    """Canonical appointment type for a free-text type, or None when it is not recognised."""
    return _APPOINTMENT_TYPE_SYNONYMS.get(_normalise_words(text))


def normalise_medication_status(text: str) -> str | None:
    """Canonical medication status (active, under_renewal, past), or None if unrecognised."""
    key = _normalise_words(text)
    if key.replace(" ", "_") in MEDICATION_STATUSES:
        return key.replace(" ", "_")
    return _MEDICATION_STATUS_SYNONYMS.get(key)


def canonical_specialty(text: str) -> str | None:
    """The one canonical specialty a name or synonym stands for, or None."""
    return _specialty_lookup().get(_normalise_words(text))


def resolve_specialty_filter(text: str) -> tuple[str, ...] | None:
    """Specialties a search term selects: one specialty, or all primary care for "PCP" etc."""
    key = _normalise_words(text)
    if key in {_normalise_words(alias) for alias in vocabulary().primary_care_aliases}:
        return vocabulary().primary_care_names
    name = canonical_specialty(text)
    return (name,) if name else None


def pcp_specialties_for_age(age: int | None) -> tuple[str, ...]:
    """Specialties that may serve as PCP for a patient of this age (adult when unknown)."""
    years = 40 if age is None else age
    return tuple(
        s.name
        for s in vocabulary().specialties
        if s.primary_care_ages and s.primary_care_ages[0] <= years <= s.primary_care_ages[1]
    )


@cache
def _specialty_lookup() -> dict[str, str]:
    lookup = {}
    for specialty in vocabulary().specialties:
        for spelling in (specialty.name, *specialty.synonyms):
            lookup[_normalise_words(spelling)] = specialty.name
    return lookup


@cache
def vocabulary() -> Vocabulary:
    return load_vocabulary(SPECIALTIES_FILE)


def load_vocabulary(path: Path) -> Vocabulary:
    """Read and validate a specialties file; ValueError names the offending entry."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("specialties"), list):
        raise ValueError(f"{path}: expected a mapping with a 'specialties' list")
    specialties = tuple(_parse_specialty(entry, path) for entry in raw["specialties"])
    _check_unique_spellings(specialties, path)
    aliases = raw.get("primary_care_aliases", [])
    if not _is_string_list(aliases):
        raise ValueError(f"{path}: 'primary_care_aliases' must be a list of strings")
    if not any(s.primary_care_ages for s in specialties):
        raise ValueError(f"{path}: at least one specialty needs a 'primary_care' age range")
    return Vocabulary(specialties, tuple(aliases))


def _parse_specialty(entry: object, path: Path) -> Specialty:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ValueError(f"{path}: every specialty needs a string 'name', got {entry!r}")
    name = entry["name"]
    for key in ("synonyms", "keywords"):
        if not _is_string_list(entry.get(key, [])):
            raise ValueError(f"{path}: specialty {name!r}: '{key}' must be a list of strings")
    return Specialty(
        name=name,
        synonyms=tuple(entry.get("synonyms", [])),
        keywords=tuple(word.lower() for word in entry.get("keywords", [])),
        primary_care_ages=_parse_ages(entry.get("primary_care"), name, path),
    )


def _parse_ages(value: object, name: str, path: Path) -> tuple[int, int] | None:
    if value is None:
        return None
    ages = (value.get("min_age"), value.get("max_age")) if isinstance(value, dict) else ()
    if len(ages) != 2 or not all(isinstance(age, int) for age in ages) or ages[0] > ages[1]:
        raise ValueError(
            f"{path}: specialty {name!r}: 'primary_care' needs integer min_age <= max_age"
        )
    return ages


def _check_unique_spellings(specialties: tuple[Specialty, ...], path: Path) -> None:
    seen: dict[str, str] = {}
    for specialty in specialties:
        for spelling in (specialty.name, *specialty.synonyms):
            key = _normalise_words(spelling)
            if seen.setdefault(key, specialty.name) != specialty.name:
                raise ValueError(
                    f"{path}: {spelling!r} names both {seen[key]!r} and {specialty.name!r}"
                )


def _is_string_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
