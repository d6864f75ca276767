"""The clinically grounded instruction's complex-patient rule, as the careful assistant reads it.

Only the drug-class vocabulary is shared with the offline judge; the judge keeps its own rule,
read from the rubric, so the measuring instrument does not move when the agent does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmark.engine.drug_classes import ANTICOAGULANTS, IMMUNOSUPPRESSANTS, SUPPLEMENTS

# Medicines (supplements left out) from which a patient counts as complex.
POLYPHARMACY = 3


def complex_patient_caution(profile: dict[str, Any]) -> str:
    """One caution naming what makes the patient complex; "" for a patient who is not."""
    caregiver = bool(profile.get("caregiver"))
    name = str(profile.get("preferred_name") or profile.get("first_name") or "they")
    voice = {
        "who": name if caregiver else "you",
        "take": "takes" if caregiver else "take",
        "have": "has" if caregiver else "have",
    }
    medicines = current_medicines(profile)
    conditions = [str(c) for c in profile.get("conditions") or []]
    for source, matches, template in CAUTIONS:
        names = medicines if source == "medicine" else conditions
        found = next((n for n in names if matches(n.lower())), None)
        if found:
            return template.format(name=found if source == "medicine" else found.lower(), **voice)
    counted = [m for m in medicines if not any(word in m.lower() for word in SUPPLEMENTS)]
    if len(counted) < POLYPHARMACY:
        return ""
    return (
        f"Because {voice['who']} {voice['take']} several medicines ({', '.join(counted[:3])}), "
        "a new symptom could be a side effect or an interaction, so I'll keep that in mind."
    )


def mentions(*words: str) -> Callable[[str], bool]:
    return lambda text: any(word in text for word in words)


def poorly_controlled_diabetes(text: str) -> bool:
    return "diabetes" in text and ("uncontrolled" in text or "poorly controlled" in text)


# (where to look, which entry, the caution), most specific first.
CAUTIONS: tuple[tuple[str, Callable[[str], bool], str], ...] = (
    (
        "medicine",
        mentions(*ANTICOAGULANTS),
        "Because {who} {take} {name}, a blood thinner, watch for unusual bleeding or bruising, "
        "and avoid ibuprofen or naproxen unless a clinician agrees.",
    ),
    (
        "medicine",
        mentions(*IMMUNOSUPPRESSANTS),
        "Because {name} weakens the immune system, treat a fever or a new infection as urgent.",
    ),
    (
        "condition",
        mentions("transplant", "chemotherapy", "immunosuppress"),
        "Because {who} {have} {name}, treat a fever or a new infection as urgent.",
    ),
    (
        "condition",
        mentions("heart failure"),
        "Because {who} {have} {name}, watch for sudden weight gain, ankle swelling or "
        "breathlessness when lying flat.",
    ),
    (
        "condition",
        mentions("end-stage", "end stage", "esrd", "eskd", "dialysis"),
        "Because {who} {have} {name}, avoid anti-inflammatory painkillers such as ibuprofen "
        "unless the kidney team agrees.",
    ),
    (
        "condition",
        poorly_controlled_diabetes,
        "Because {who} {have} {name}, check blood sugar more often while unwell and watch for "
        "very high readings.",
    ),
)


def current_medicines(profile: dict[str, Any]) -> list[str]:
    medications = [m for m in profile.get("medications") or [] if isinstance(m, dict)]
    return [str(m["name"]) for m in medications if m.get("name") and m.get("status") != "past"]
