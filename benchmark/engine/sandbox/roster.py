"""The provider roster: its schema, the prompt that asks a model for one, and the call.

A roster is {"offices": [...], "providers": [...]}; see validate_roster for every rule. It is
generated once per case and repetition of a run (one LLM call, shared by every agent's
conversation of it: benchmark.services.rosters) and turned into each conversation's Sandbox.
"""

from __future__ import annotations

import re
from pathlib import Path
from string import Template
from typing import Any

from benchmark.engine.sandbox.vocabulary import (
    canonical_specialty,
    pcp_specialties_for_age,
    vocabulary,
)
from llm.engine.chat import ChatRequest, ChatResponse, Message
from llm.engine.structured import ChatClient, InvalidOutput, request_json

ROSTER_PROMPT_FILE = Path(__file__).resolve().parents[2] / "data" / "prompts" / "roster.md"

OFFICE_COUNT = (4, 6)
PROVIDER_COUNT = (10, 15)
OFFICE_FIELDS = ("id", "name", "address", "phone", "hours")
PROVIDER_FIELDS = ("id", "name", "specialty", "credentials", "office_id")
MAX_FIELD_LENGTH = 200

_NON_DIGITS = re.compile(r"\D")


def patient_profile(profile_or_entry: dict[str, Any]) -> dict[str, Any]:
    """The patient_profile dict, whether given the profile itself or the whole patient entry."""
    inner = profile_or_entry.get("patient_profile")
    return inner if isinstance(inner, dict) else profile_or_entry


def patient_age(profile: dict[str, Any]) -> int | None:
    age = profile.get("age")
    return age if isinstance(age, int) and not isinstance(age, bool) else None


def normalise_phone(value: str) -> str | None:
    """Ten digits, dropping punctuation and a leading US country code; None if not a phone."""
    digits = _NON_DIGITS.sub("", value)
    if len(digits) == 11 and digits.startswith("1"):
        digits = digits[1:]
    return digits if len(digits) == 10 else None


def validate_roster(data: Any, *, patient_age: int | None = None) -> dict[str, Any]:
    """Return the roster with canonical specialties and phones, or raise InvalidOutput.

    Unknown keys are dropped. The error names the offending field so a model can fix it.
    """
    if not isinstance(data, dict):
        raise InvalidOutput("The roster must be a JSON object with 'offices' and 'providers'.")
    offices = [
        _validated_office(office, f"offices[{index}]")
        for index, office in enumerate(_entries(data, "offices", OFFICE_COUNT))
    ]
    office_ids = _unique(offices, "offices", "id")
    providers = [
        _validated_provider(provider, f"providers[{index}]", office_ids)
        for index, provider in enumerate(_entries(data, "providers", PROVIDER_COUNT))
    ]
    _unique(providers, "providers", "id")
    _unique(providers, "providers", "name")
    _require_primary_care(providers, patient_age)
    return {"offices": offices, "providers": providers}


def _entries(data: dict[str, Any], key: str, bounds: tuple[int, int]) -> list[Any]:
    entries = data.get(key)
    if not isinstance(entries, list):
        raise InvalidOutput(f"'{key}' must be a list.")
    if not bounds[0] <= len(entries) <= bounds[1]:
        raise InvalidOutput(
            f"'{key}' must hold between {bounds[0]} and {bounds[1]} entries, not {len(entries)}."
        )
    return entries


def _strings(entry: Any, where: str, fields: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(entry, dict):
        raise InvalidOutput(f"{where} must be an object with fields {', '.join(fields)}.")
    values = {}
    for field in fields:
        value = entry.get(field)
        if not isinstance(value, str) or not value.strip():
            raise InvalidOutput(f"{where}.{field} must be a non-empty string.")
        if len(value) > MAX_FIELD_LENGTH:
            raise InvalidOutput(f"{where}.{field} is longer than {MAX_FIELD_LENGTH} characters.")
        values[field] = value.strip()
    return values


def _validated_office(entry: Any, where: str) -> dict[str, str]:
    office = _strings(entry, where, OFFICE_FIELDS)
    phone = normalise_phone(office["phone"])
    if phone is None:
        raise InvalidOutput(f"{where}.phone must be a 10-digit US phone number.")
    return {**office, "phone": phone}


def _validated_provider(entry: Any, where: str, office_ids: set[str]) -> dict[str, str]:
    provider = _strings(entry, where, PROVIDER_FIELDS)
    specialty = canonical_specialty(provider["specialty"])
    if specialty is None:
        raise InvalidOutput(
            f"{where}.specialty {provider['specialty']!r} is not an allowed specialty; "
            f"use one of: {', '.join(vocabulary().names)}."
        )
    if provider["office_id"] not in office_ids:
        raise InvalidOutput(
            f"{where}.office_id {provider['office_id']!r} is not the id of any office."
        )
    return {**provider, "specialty": specialty}


def _unique(entries: list[dict[str, str]], key: str, field: str) -> set[str]:
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        value = entry[field].lower()
        if value in seen:
            raise InvalidOutput(f"{key}[{index}].{field} {entry[field]!r} is used twice.")
        seen.add(value)
    return {entry[field] for entry in entries}


def _require_primary_care(providers: list[dict[str, str]], age: int | None) -> None:
    eligible = pcp_specialties_for_age(age)
    if not any(provider["specialty"] in eligible for provider in providers):
        raise InvalidOutput(
            "'providers' needs at least one clinician who can be this patient's primary care "
            f"provider: one of {', '.join(eligible)}."
        )


def render_roster_prompt(profile: dict[str, Any]) -> str:
    profile = patient_profile(profile)
    address = profile.get("address") if isinstance(profile.get("address"), dict) else {}
    age = patient_age(profile)
    conditions = profile.get("conditions") or []
    template = Template(ROSTER_PROMPT_FILE.read_text(encoding="utf-8"))
    return template.substitute(
        city=address.get("city", "unknown city"),
        state=address.get("state", ""),
        zip=address.get("zip", ""),
        age="unknown (assume an adult)" if age is None else str(age),
        conditions=", ".join(str(c) for c in conditions) or "none recorded",
        specialties=", ".join(vocabulary().names),
        primary_care=", ".join(pcp_specialties_for_age(age)),
    )


def generate_roster(
    client: ChatClient, profile: dict[str, Any], *, model: str, seed: int
) -> tuple[dict[str, Any], list[ChatResponse]]:
    """Ask the model for a roster near the patient; raises StructuredFailure if it never fits."""
    profile = patient_profile(profile)
    age = patient_age(profile)
    request = ChatRequest(
        model=model,
        purpose="roster",
        system=render_roster_prompt(profile),
        messages=(Message(role="user", content="Write the directory now as one JSON object."),),
        hints={"profile": profile, "seed": seed},
        sample=f"roster-seed:{seed}",
    )
    result = request_json(client, request, lambda data: validate_roster(data, patient_age=age))
    return result.data, result.responses
