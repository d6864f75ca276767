"""Offline roster script: a plausible provider directory built by fixed rules, not a model.

Deterministic in the hints (seed and the patient's city, state, age and conditions): the same
patient and seed always get the same directory. It always includes primary-care clinicians
suited to the patient's age and specialists whose keywords match the patient's conditions.
"""

from __future__ import annotations

import json
import random
from typing import Any

from benchmark.engine.sandbox.roster import patient_age
from benchmark.engine.sandbox.vocabulary import pcp_specialties_for_age, vocabulary
from benchmark.engine.seeds import derive_seed
from llm.engine.chat import ChatRequest, ChatResponse, Usage

_CLINIC_PREFIXES = (
    "Riverside",
    "Northgate",
    "Cedar Ridge",
    "Lakeview",
    "Oak Hill",
    "Summit",
    "Meadowbrook",
    "Heritage",
    "Parkway",
    "Willow Creek",
    "Harbor",
    "Pinecrest",
)
_CLINIC_KINDS = (
    "Primary Care",
    "Family Health Center",
    "Medical Group",
    "Specialty Clinic",
    "Health Partners",
    "Medical Associates",
)
_STREETS = ("Main", "Oak", "Maple", "Cedar", "Elm", "Washington", "Lincoln", "Park", "Lake")
_STREET_SUFFIXES = ("St", "Ave", "Blvd", "Rd", "Dr", "Pkwy")
_HOURS = ("Mon-Fri 8:00-17:00", "Mon-Fri 7:30-16:30", "Mon-Thu 8:00-18:00, Fri 8:00-12:00")
_FIRST_NAMES = (
    "Priya",
    "James",
    "Ana",
    "Kevin",
    "Helen",
    "Samuel",
    "Laura",
    "Michael",
    "Rosa",
    "Daniel",
    "Grace",
    "Omar",
    "Aisha",
    "Thomas",
    "Mei",
    "Carlos",
    "Nora",
    "Victor",
    "Fatima",
    "Elena",
)
_LAST_NAMES = (
    "Patel",
    "Whitaker",
    "Ruiz",
    "Osei",
    "Park",
    "Greene",
    "Chen",
    "Brandt",
    "Delgado",
    "Kim",
    "Holloway",
    "Haddad",
    "Nguyen",
    "Okafor",
    "Schultz",
    "Moreno",
    "Iverson",
    "Adeyemi",
)
MAX_RELEVANT_SPECIALISTS = 5


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    """Answer a purpose="roster" request with one roster JSON object."""
    profile = request.hints.get("profile") or {}
    text = json.dumps(build_roster(profile, request.hints.get("seed", 0)))
    prompt = request.system + "".join(message.content for message in request.messages)
    return ChatResponse(
        text=text, usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4)
    )


def build_roster(profile: dict[str, Any], seed: int) -> dict[str, Any]:
    address = profile.get("address") if isinstance(profile.get("address"), dict) else {}
    city, state = str(address.get("city", "Springfield")), str(address.get("state", "IL"))
    rng = random.Random(derive_seed(seed, city, state))
    offices = _offices(rng, city, state, str(address.get("zip", "")), _area_code(profile))
    specialties = _specialties(rng, profile)
    names = rng.sample(
        [f"{first} {last}" for first in _FIRST_NAMES for last in _LAST_NAMES], len(specialties)
    )
    providers = [
        {
            "id": f"dr-{index:02d}",
            "name": name,
            "specialty": specialty,
            "credentials": rng.choice(("MD", "MD", "DO", "NP")),
            "office_id": offices[(index - 1) % len(offices)]["id"],
        }
        for index, (name, specialty) in enumerate(zip(names, specialties, strict=True), 1)
    ]
    return {"offices": offices, "providers": providers}


def _area_code(profile: dict[str, Any]) -> str:
    phone = "".join(ch for ch in str(profile.get("phone", "")) if ch.isdigit())
    return phone[:3] if len(phone) == 10 else "555"


def _offices(
    rng: random.Random, city: str, state: str, zip_code: str, area_code: str
) -> list[dict[str, str]]:
    count = rng.randint(4, 6)
    prefixes = rng.sample(_CLINIC_PREFIXES, count)
    return [
        {
            "id": f"office-{index}",
            "name": f"{prefix} {rng.choice(_CLINIC_KINDS)}",
            "address": (
                f"{rng.randint(100, 9899)} {rng.choice(_STREETS)} {rng.choice(_STREET_SUFFIXES)}, "
                f"{city}, {state} {zip_code}".strip()
            ),
            "phone": f"{area_code}55501{rng.randint(0, 99):02d}",
            "hours": rng.choice(_HOURS),
        }
        for index, prefix in enumerate(prefixes, 1)
    ]


def _specialties(rng: random.Random, profile: dict[str, Any]) -> list[str]:
    """Primary care first (two clinicians of each suitable specialty), then specialists."""
    age = patient_age(profile)
    primary = [name for name in pcp_specialties_for_age(age) for _ in range(2)]
    conditions = " ".join(str(c) for c in profile.get("conditions") or []).lower()
    relevant = [
        s.name
        for s in vocabulary().specialties
        if s.primary_care_ages is None and any(word in conditions for word in s.keywords)
    ][:MAX_RELEVANT_SPECIALISTS]
    others = [s.name for s in vocabulary().specialties if s.primary_care_ages is None]
    total = rng.randint(10, 15)
    chosen = (primary + relevant)[:total]
    return chosen + [rng.choice(others) for _ in range(total - len(chosen))]
