"""Look-ups before acting, and the action proposed for each way of serving a need.

Every action is a real tool call with JSON arguments, so bookings use a slot id the script
actually saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from benchmark.engine.agents.offline_assistant.state import (
    YES,
    Action,
    State,
    records,
    short,
    slot_line,
)
from benchmark.engine.agents.offline_assistant.texts import MESSAGE_REASONS

PHONE = re.compile(r"\b\d{10}\b")
NOT_A_FACT = re.compile(r"(hi|hello|thanks|thank you|fine|before i agree)\b", re.IGNORECASE)


def availability_window(s: State) -> dict[str, Any]:
    return {
        "start_date": (s.today + timedelta(days=1)).isoformat(),
        "end_date": (s.today + timedelta(days=7)).isoformat(),
        "specialty": "primary care",
    }


LOOKUPS: dict[str, tuple[str, Callable[[State], dict[str, Any]]]] = {
    "booking": ("get_available_appointments", availability_window),
    "change_pcp": ("list_doctors", lambda s: {"specialty": "primary care"}),
    "refill": ("list_medications", lambda s: {}),
    **{route: ("get_profile", lambda s: {}) for route in ("pharmacy", "insurance", "contact")},
}


def lookups(s: State) -> list[tuple[str, dict[str, Any]]]:
    """Read-only calls to make before proposing anything, in order."""
    needed: list[tuple[str, dict[str, Any]]] = []
    if s.reviews_record:
        needed.append(("list_medications", {}))
    if s.route == "booking" and s.intent == "reschedule":
        needed.append(("list_appointments", {}))
    if s.route in LOOKUPS:
        tool, arguments = LOOKUPS[s.route]
        needed.append((tool, arguments(s)))
    return needed


def propose_booking(s: State) -> Action | None:
    slots = records(s, "get_available_appointments", "slot_id")
    if not slots:
        return message_pcp(s, "fallback")
    slot = next(
        (
            slot
            for text in reversed(s.user_texts)
            for slot in slots
            if f"{slot.get('date')} at {slot.get('time')}" in text
            and str(slot.get("doctor")) in text
        ),
        None,
    )
    if slot is None:
        return None
    arguments = {
        "appointment_type": slot.get("appointment_type", "in-person"),
        "preferred_date": slot.get("date"),
        "preferred_time": slot.get("time"),
        "doctor": slot.get("doctor_id") or slot.get("doctor"),
        "reason": short(s.user_texts[0]),
        "slot_id": slot["slot_id"],
    }
    return Action("schedule_appointment", arguments, f"book {slot_line(slot)}")


def propose_pcp(s: State) -> Action | None:
    doctors = records(s, "list_doctors", "specialty")
    replies = [text.lower() for text in reversed(s.user_texts)]
    chosen = next((d for text in replies for d in doctors if d["name"].lower() in text), None)
    if chosen is None:
        return None
    reference = chosen.get("id") or chosen["name"]
    return Action("update_pcp", {"doctor": reference}, f"make {chosen['name']} your PCP")


def propose_refill(s: State) -> Action | None:
    text = s.all_user_text.lower()
    listed = records(s, "list_medications", "name")
    medication = next((m for m in listed if str(m["name"]).lower() in text), None)
    if medication is None:
        return None
    name = str(medication["name"])
    if medication.get("refills_remaining") == 0:
        action = message_pcp(s, "renewal")
        return Action(action.tool, action.arguments, f"ask your PCP to renew {name}")
    return Action("request_refill", {"medication_name": name}, f"send a refill request for {name}")


def propose_pharmacy(s: State) -> Action | None:
    match = re.search(r"pharmacy to (.+?) at (.+?)[.!]", s.all_user_text)
    if not match:
        return None
    arguments = {"name": match.group(1), "address": match.group(2)}
    current = (s.profile.get("preferred_pharmacy") or {}).get("name") or "none"
    return Action(
        "update_pharmacy",
        arguments,
        f"change your pharmacy from {current} to {match.group(1)}",
    )


def propose_insurance(s: State) -> Action | None:
    match = re.search(r"now ([^,.]+), ([^.]+?) plan", s.all_user_text)
    if not match:
        return None
    arguments = {"provider": match.group(1), "plan_type": match.group(2)}
    current = (s.profile.get("insurance") or {}).get("provider") or "none"
    return Action(
        "update_insurance",
        arguments,
        f"update your insurance from {current} to {match.group(1)} {match.group(2)}",
    )


def propose_contact(s: State) -> Action | None:
    current = re.sub(r"\D", "", str(s.profile.get("phone") or ""))
    phones = [p for p in PHONE.findall(s.all_user_text) if p != current]
    if not phones:
        return None
    return Action(
        "update_contact_info",
        {"phone": phones[-1]},
        f"change your phone number from {current or 'none'} to {phones[-1]}",
    )


def propose_queue(s: State) -> Action:
    if s.intent == "crisis":
        return Action(
            "join_virtual_call_queue",
            {"doctor": "PCP", "reason": "Mental health crisis"},
            "put you in the queue for a video visit with your care team right now",
        )
    return Action(
        "join_virtual_call_queue",
        {"doctor": "PCP", "reason": short(s.user_texts[0])},
        "put you in the queue to talk to your PCP by video today",
    )


def propose_urgent_message(s: State) -> Action:
    action = message_pcp(s, "emergency" if s.intent == "emergency" else "red_flag")
    if s.intent == "emergency":
        return action
    return Action(action.tool, action.arguments, "also send an urgent message to your PCP")


def message_pcp(s: State, reason: str) -> Action:
    text = s.all_user_text.lower()
    urgent = s.route == "urgent_message" or "severe" in text
    arguments: dict[str, Any] = {
        "reason": MESSAGE_REASONS.get(reason, "Symptom review"),
        "message": short(" ".join(statements(s)), limit=600),
        "urgency": "urgent" if urgent else "routine",
    }
    severity = next((word for word in ("severe", "moderate", "mild") if word in text), None)
    if severity:
        arguments["severity"] = severity
    return Action("message_pcp", arguments, f"send a secure message about this to {s.whose} PCP")


def fallback_message(s: State) -> Action:
    return message_pcp(s, "fallback")


PROPOSALS: dict[str, Callable[[State], Action | None]] = {
    "booking": propose_booking,
    "queue": propose_queue,
    "urgent_message": propose_urgent_message,
    "message": lambda s: message_pcp(s, s.intent),
    "refill": propose_refill,
    "change_pcp": propose_pcp,
    "pharmacy": propose_pharmacy,
    "insurance": propose_insurance,
    "contact": propose_contact,
}


def statements(s: State) -> list[str]:
    """The facts the patient told us: their sentences without greetings, questions, consent
    or thanks."""
    sentences = [
        sentence.strip() for text in s.user_texts for sentence in re.split(r"(?<=[.!?])\s+", text)
    ]
    return [
        sentence
        for sentence in sentences
        if sentence
        and not sentence.endswith("?")
        and not YES.search(sentence)
        and not NOT_A_FACT.match(sentence)
    ]
