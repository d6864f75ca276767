"""Finding what a tool argument refers to: a clinician, a specialty, a medication.

Models name things loosely ("Dr. Patel", "my PCP", "metformin 500mg"), so each lookup accepts
the common forms and, when it cannot decide, says why and what would work.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Any

from benchmark.engine.sandbox.arguments import ToolError
from benchmark.engine.sandbox.vocabulary import resolve_specialty_filter, vocabulary

if TYPE_CHECKING:
    from benchmark.engine.sandbox.state import SandboxState

PCP_REFERENCES = frozenset(
    {
        "pcp",
        "my pcp",
        "the pcp",
        "primary care provider",
        "primary care physician",
        "primary care doctor",
        "my primary care provider",
        "my primary care physician",
        "my primary care doctor",
    }
)
_TITLE = re.compile(r"^(dr\.?|doctor)\s+")
# When several records share a name, the one a refill most plausibly means comes first.
_STATUS_PREFERENCE = ("active", "under_renewal", "past")


def assigned_pcp(sandbox: SandboxState) -> dict[str, Any]:
    pcp = sandbox.pcp
    if pcp is None:
        raise ToolError("The patient has no assigned PCP; assign one with update_pcp first.")
    return pcp


def resolve_doctor(sandbox: SandboxState, reference: str) -> dict[str, Any]:
    """The clinician an id, a name (any case, with or without "Dr.") or "PCP" refers to."""
    key = " ".join(reference.lower().split())
    if key in PCP_REFERENCES:
        return assigned_pcp(sandbox)
    for provider in sandbox.providers:
        if provider["id"].lower() == key:
            return provider
    name = _TITLE.sub("", key.split(",")[0]).strip()
    exact = [p for p in sandbox.providers if p["name"].lower() == name]
    if exact:
        return exact[0]
    pattern = re.compile(rf"\b{re.escape(name)}\b") if name else None
    partial = [p for p in sandbox.providers if pattern and pattern.search(p["name"].lower())]
    if len(partial) == 1:
        return partial[0]
    if partial:
        raise ToolError(
            f"{reference[:80]!r} matches several clinicians; use one of their ids.",
            candidates=[_doctor_summary(p) for p in partial],
        )
    raise ToolError(
        f"No clinician in the network matches {reference[:80]!r}. Use list_doctors to see "
        "their ids and names."
    )


def resolve_specialties(text: str) -> tuple[str, ...]:
    specialties = resolve_specialty_filter(text)
    if specialties is None:
        raise ToolError(
            f"{text[:80]!r} is not a known specialty.", valid_specialties=list(vocabulary().names)
        )
    return specialties


def find_medication(sandbox: SandboxState, reference: str) -> dict[str, Any]:
    """The medication a name (case-insensitive, partial) or medication_id refers to."""
    key = " ".join(reference.lower().split())
    for medication in sandbox.medications:
        if medication["id"] == key:
            return medication
    matches = medications_named(sandbox, key)
    exact = [m for m in matches if m["name"].lower() == key]
    matches = exact or matches
    if not matches:
        raise ToolError(
            f"No medication on file matches {reference[:80]!r}.",
            medications_on_file=sorted({m["name"] for m in sandbox.medications}),
        )
    names = sorted({m["name"] for m in matches})
    if len({name.lower() for name in names}) > 1:
        raise ToolError(
            f"{reference[:80]!r} matches several medications: {', '.join(names)}. "
            "Use the full name or the medication_id."
        )
    return min(matches, key=lambda m: _STATUS_PREFERENCE.index(m["status"]))


def medications_named(sandbox: SandboxState, key: str) -> list[dict[str, Any]]:
    """Records whose name contains `key`, or is contained in it ("metformin 500 mg")."""
    return [m for m in sandbox.medications if key in m["name"].lower() or m["name"].lower() in key]


def _doctor_summary(provider: dict[str, Any]) -> dict[str, str]:
    return {"id": provider["id"], "name": provider["name"], "specialty": provider["specialty"]}


def doctor_view(sandbox: SandboxState, provider: dict[str, Any]) -> dict[str, Any]:
    office = sandbox.offices_by_id[provider["office_id"]]
    return {
        **_doctor_summary(provider),
        "credentials": provider["credentials"],
        "office": {key: office[key] for key in ("name", "address", "phone", "hours")},
        "is_pcp": provider["id"] == sandbox.pcp_id,
    }


def slot_view(sandbox: SandboxState, slot: dict[str, Any]) -> dict[str, Any]:
    provider = sandbox.providers_by_id[slot["doctor_id"]]
    return {
        "slot_id": slot["id"],
        "date": slot["date"],
        "weekday": date.fromisoformat(slot["date"]).strftime("%A"),
        "time": slot["time"],
        "doctor_id": provider["id"],
        "doctor": provider["name"],
        "specialty": provider["specialty"],
        "office": sandbox.offices_by_id[slot["office_id"]]["name"],
        "appointment_type": slot["type"],
    }
