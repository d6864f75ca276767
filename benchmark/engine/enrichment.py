"""Seed -> patient entry: one model call, validated against a schema and the seed itself.

The entry shape is the contract in docs/architecture.md. A model answer that breaks the schema
or contradicts the seed (its sex, age or condition) is sent back with every problem listed by
JSON path; after the bounded repairs the caller gets a failure with its reason, never a
partially valid entry. A seed that breaks an eligibility rule on purpose (`broken_rule`) is
described to the model as such, must keep its contradiction like any other seed must keep its
attributes, and is labelled infeasible from the rule, never from the model's judgement.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from llm.engine.chat import ChatRequest, ChatResponse, Message
from llm.engine.structured import (
    ChatClient,
    InvalidOutput,
    StructuredFailure,
    extract_json_object,
    json_request,
    request_json,
)

PROMPT_PATH = Path(__file__).resolve().parent.parent / "data" / "prompts" / "enrichment.md"

MEDICATION_STATUSES = ("active", "under_renewal", "past")
INFEASIBLE = "infeasible"
SCENARIO_COMPLEXITIES = ("regular", "chronic", "complicated", INFEASIBLE)
ADULT_AGE = 18
SELF_PAY = "Self Pay"
MIN_STORY_SENTENCES, MAX_STORY_SENTENCES = 3, 5
MAX_REPORTED_PROBLEMS = 15  # enough to fix an answer in one go without flooding the prompt
PROMPT_SECTIONS = ("system", "user", "eligible", "infeasible")
# Where a condition's leading diagnosis ends: "Atrial fibrillation on anticoagulation".
CONDITION_QUALIFIERS = re.compile(r"\s(?:with|on|in|after)\s|\(.*?\)", flags=re.IGNORECASE)

_TEXT = {"type": "string", "minLength": 1}
_PHONE = {
    "type": "string",
    "pattern": r"^[0-9]{10}$",
    "description": "ten digits, no spaces or punctuation",
}
_DATE = {"type": "string", "format": "date", "description": "YYYY-MM-DD"}


def _object(properties: dict[str, Any], *, optional: tuple[str, ...] = ()) -> dict[str, Any]:
    required = [name for name in properties if name not in optional]
    return {"type": "object", "required": required, "properties": properties}


ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **_object(
        {
            "patient_profile": {"$ref": "#/$defs/profile"},
            "patient_story": _TEXT,
            "scenario_complexity": {"enum": list(SCENARIO_COMPLEXITIES)},
        }
    ),
    "$defs": {
        "profile": _object(
            {
                "first_name": _TEXT,
                "last_name": _TEXT,
                "preferred_name": _TEXT,
                "date_of_birth": _DATE,
                "age": {"type": "integer", "minimum": 0},
                "sex": _TEXT,
                "gender": _TEXT,
                "pronouns": _TEXT,
                "timezone": {
                    "type": "string",
                    "pattern": r"^[A-Za-z]+/[A-Za-z_]+(/[A-Za-z_]+)?$",
                    "description": "an IANA time zone such as America/Chicago",
                },
                "address": _object(
                    {
                        "street": _TEXT,
                        "city": _TEXT,
                        "state": {
                            "type": "string",
                            "pattern": "^[A-Z]{2}$",
                            "description": "two-letter state code",
                        },
                        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                    }
                ),
                "phone": _PHONE,
                "email": {"type": "string", "format": "email"},
                "emergency_contact": _object(
                    {"name": _TEXT, "relationship": _TEXT, "phone": _PHONE}
                ),
                # Object or null; `required` only applies when it is an object.
                "caregiver": {
                    **_object({"name": _TEXT, "relationship": _TEXT}),
                    "type": ["object", "null"],
                },
                "insurance": _object({"provider": _TEXT, "plan_type": _TEXT}),
                "preferred_pharmacy": _object({"name": _TEXT, "address": _TEXT, "phone": _PHONE}),
                "conditions": {"type": "array", "items": _TEXT, "minItems": 1},
                "medications": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/medication"},
                    "minItems": 2,
                    "maxItems": 5,
                },
                "allergies": {"type": "array", "items": _TEXT},
            }
        ),
        "medication": _object(
            {
                "name": _TEXT,
                "dosage": _TEXT,
                "frequency": _TEXT,
                "status": {"enum": list(MEDICATION_STATUSES)},
                "refills_remaining": {"type": "integer", "minimum": 0},
                "last_filled": _DATE,
                "pharmacy": _TEXT,
            }
        ),
    },
}

_VALIDATOR = Draft202012Validator(ENTRY_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


@dataclass(frozen=True)
class EnrichmentResult:
    entry: dict[str, Any] | None
    failure_reason: str | None
    responses: list[ChatResponse]

    @property
    def ok(self) -> bool:
        return self.entry is not None


def enrich(
    client: ChatClient,
    seed: dict[str, Any],
    *,
    model: str,
    today: date,
    max_repairs: int = 2,
    sample: str = "",
) -> EnrichmentResult:
    """Ask `model` to turn `seed` into a patient entry. ProviderError propagates.

    `sample` names the entry (see ChatRequest.sample): two entries with equal seeds are
    enriched independently."""
    request = enrichment_request(seed, model=model, today=today, sample=sample)
    try:
        result = request_json(
            client,
            request,
            lambda data: validate_entry(data, seed, today=today),
            max_repairs=max_repairs,
            schema=ENTRY_SCHEMA,
        )
    except StructuredFailure as failure:
        return EnrichmentResult(None, failure.reason, failure.responses)
    return EnrichmentResult(_labelled(result.data, seed), None, result.responses)


def enrichment_request(
    seed: dict[str, Any], *, model: str, today: date, sample: str = ""
) -> ChatRequest:
    """The call `enrich` makes first (before `request_json` asks it for the entry's JSON)."""
    system, user = render_prompt(seed, today)
    return ChatRequest(
        model=model,
        purpose="enrichment",
        system=system,
        messages=(Message(role="user", content=user),),
        hints={"seed": seed, "today": today.isoformat()},
        sample=sample,
    )


def batch_enrichment_request(
    seed: dict[str, Any], *, model: str, today: date, sample: str = ""
) -> ChatRequest:
    """The first call as a batch sends it: asking for the entry's JSON, as `enrich` asks."""
    request = enrichment_request(seed, model=model, today=today, sample=sample)
    return json_request(request, ENTRY_SCHEMA)


def entry_from_answer(response: ChatResponse, seed: dict[str, Any], *, today: date) -> dict:
    """The entry in one answer (a batch's: it is not repaired), validated as `enrich`
    validates each answer; raises InvalidOutput with the reason."""
    if response.refusal:
        raise InvalidOutput(f"the model refused: {response.refusal}")
    data = validate_entry(extract_json_object(response.text), seed, today=today)
    return _labelled(data, seed)


def _labelled(entry: dict[str, Any], seed: dict[str, Any]) -> dict[str, Any]:
    """`entry` with the infeasible label a rule-breaking seed carries by design."""
    if not seed.get("broken_rule"):
        return entry
    return {**entry, "scenario_complexity": INFEASIBLE}


def render_prompt(seed: dict[str, Any], today: date) -> tuple[str, str]:
    """(system, user) prompt text for one seed."""
    youngest, oldest = seed["age_range"]
    sections = _prompt_sections()
    broken = seed.get("broken_rule")
    note = Template(sections["infeasible" if broken else "eligible"]).substitute(
        broken_rule=broken["text"] if broken else ""
    )
    user_text = Template(sections["user"]).substitute(
        today=today.isoformat(),
        seed_json=json.dumps(seed, indent=2, ensure_ascii=False),
        youngest=youngest,
        oldest=oldest,
        eligibility_note=note,
    )
    return sections["system"], user_text


@lru_cache(maxsize=1)
def _prompt_sections() -> dict[str, str]:
    names = "|".join(PROMPT_SECTIONS)
    parts = re.split(rf"^# ({names})[ \t]*$", PROMPT_PATH.read_text(encoding="utf-8"), flags=re.M)
    sections = dict(zip(parts[1::2], (part.strip() for part in parts[2::2]), strict=True))
    if sorted(sections) != sorted(PROMPT_SECTIONS) or len(parts) != 2 * len(PROMPT_SECTIONS) + 1:
        headings = ", ".join(f"'# {name}'" for name in PROMPT_SECTIONS)
        raise ValueError(f"{PROMPT_PATH} needs exactly one of each section: {headings}")
    return sections


def validate_entry(data: dict[str, Any], seed: dict[str, Any], *, today: date) -> dict[str, Any]:
    """Return `data` if it is a valid entry for `seed` as of `today`, else raise InvalidOutput.

    Schema problems are reported first; the checks against the seed and the date need a
    well-formed entry, so they run only once the schema passes.
    """
    problems = [_describe(error) for error in sorted(_VALIDATOR.iter_errors(data), key=_path_of)]
    if not problems:
        problems = _seed_problems(data, seed, today)
    if problems:
        raise InvalidOutput(_summary(problems))
    return data


def _path_of(error: ValidationError) -> str:
    return error.json_path


def _describe(error: ValidationError) -> str:
    if error.validator == "minItems":
        text = f"has {len(error.instance)} item(s); needs at least {error.validator_value}"
    elif error.validator == "maxItems":
        text = f"has {len(error.instance)} item(s); allows at most {error.validator_value}"
    else:
        text = _shorten(error.message)
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    return f"{error.json_path}: {text}" + (f" (expected {hint})" if hint else "")


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seed_problems(data: dict[str, Any], seed: dict[str, Any], today: date) -> list[str]:
    profile = data["patient_profile"]
    return [
        *_demographic_problems(profile, seed, today),
        *_condition_problems(profile, seed),
        *_complexity_problems(data["scenario_complexity"], seed),
        *_medication_problems(profile["medications"], today),
        *_care_problems(profile),
        *_story_problems(data["patient_story"]),
    ]


def _demographic_problems(profile: dict[str, Any], seed: dict[str, Any], today: date) -> list[str]:
    problems = []
    if profile["sex"] != seed["sex"]:
        problems.append(
            f"$.patient_profile.sex: is {profile['sex']!r} but the seed's sex is {seed['sex']!r}"
        )
    youngest, oldest = seed["age_range"]
    age = profile["age"]
    if not youngest <= age <= oldest:
        problems.append(
            f"$.patient_profile.age: {age} is outside the {seed['age_group']} age group "
            f"({youngest}-{oldest}); the seed's age is {seed['age']}"
        )
    elif age != seed["age"]:
        problems.append(f"$.patient_profile.age: is {age} but the seed's age is {seed['age']}")
    born = date.fromisoformat(profile["date_of_birth"])
    if born > today:
        problems.append(f"$.patient_profile.date_of_birth: {born} is after today ({today})")
    elif abs(_age_on(today, born) - age) > 1:
        problems.append(
            f"$.patient_profile.date_of_birth: {born} makes the patient {_age_on(today, born)} "
            f"on {today}, but age is {age}"
        )
    return problems


def _condition_problems(profile: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    """The seed's leading diagnosis must be among the profile's conditions, so a model
    cannot swap it for a similar one (or for a plausible one when the seed is infeasible)."""
    leading = _leading_diagnosis(seed["condition"])
    if any(f" {leading} " in f" {_words(condition)} " for condition in profile["conditions"]):
        return []
    return [
        f"$.patient_profile.conditions: none names the seed's condition "
        f"{seed['condition']!r}; list it in the seed's words (at least {leading!r})"
    ]


def _leading_diagnosis(condition: str) -> str:
    """The first diagnosis a condition names, in lower-case words: "Lupus (SLE) with
    nephritis" -> "lupus", "Atrial fibrillation on anticoagulation" -> "atrial fibrillation"."""
    leading = _words(CONDITION_QUALIFIERS.split(f" {condition} ", maxsplit=1)[0])
    return leading or _words(condition)


def _words(text: str) -> str:
    """Lower-case words joined by single spaces; punctuation and apostrophes dropped."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", re.sub(r"['’]", "", text.lower())).split())


def _complexity_problems(complexity: str, seed: dict[str, Any]) -> list[str]:
    if complexity == INFEASIBLE and not seed.get("broken_rule"):
        return [
            "$.scenario_complexity: 'infeasible' is only for seeds that break a rule on "
            "purpose; this seed's attributes fit together, so choose regular, chronic or "
            "complicated"
        ]
    return []


def _age_on(day: date, born: date) -> int:
    return day.year - born.year - ((day.month, day.day) < (born.month, born.day))


def _medication_problems(medications: list[dict[str, Any]], today: date) -> list[str]:
    problems = []
    if not any(medication["status"] == "active" for medication in medications):
        problems.append("$.patient_profile.medications: at least one needs status 'active'")
    for position, medication in enumerate(medications):
        filled = date.fromisoformat(medication["last_filled"])
        if filled > today:
            problems.append(
                f"$.patient_profile.medications[{position}].last_filled: {filled} is after "
                f"today ({today})"
            )
    return problems


def _care_problems(profile: dict[str, Any]) -> list[str]:
    problems = []
    if profile["age"] < ADULT_AGE and profile["caregiver"] is None:
        problems.append("$.patient_profile.caregiver: a patient under 18 needs a caregiver")
    insurance = profile["insurance"]
    if insurance["provider"] == SELF_PAY and insurance["plan_type"] != "none":
        problems.append("$.patient_profile.insurance.plan_type: must be 'none' for Self Pay")
    return problems


def _story_problems(story: str) -> list[str]:
    count = count_sentences(story)
    if MIN_STORY_SENTENCES <= count <= MAX_STORY_SENTENCES:
        return []
    return [
        f"$.patient_story: has {count} sentence(s); write "
        f"{MIN_STORY_SENTENCES} to {MAX_STORY_SENTENCES}"
    ]


def count_sentences(text: str) -> int:
    """Sentences split at ., ! or ? followed by whitespace (abbreviations count as breaks)."""
    return len([part for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part])


def _summary(problems: list[str]) -> str:
    shown = problems[:MAX_REPORTED_PROBLEMS]
    hidden = len(problems) - len(shown)
    lines = [f"The patient entry has {len(problems)} problem(s):", *(f"- {p}" for p in shown)]
    if hidden:
        lines.append(f"- ... and {hidden} more")
    return "\n".join(lines)
