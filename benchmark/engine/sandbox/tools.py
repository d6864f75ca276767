"""The 15 tools. Each takes the sandbox and cleaned arguments and returns (content, write_action).

Preconditions are checked before anything changes, so a refused call leaves the state as it
was. A write action records what changed, with the details needed to check an outcome
objectively afterwards (who was booked, which medication was refilled, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from benchmark.engine.sandbox.arguments import ToolError, parse_date, parse_time_preference
from benchmark.engine.sandbox.lookups import (
    assigned_pcp,
    doctor_view,
    find_medication,
    medications_named,
    resolve_doctor,
    resolve_specialties,
    slot_view,
)
from benchmark.engine.sandbox.roster import normalise_phone, patient_age
from benchmark.engine.sandbox.scheduling import closest_slot
from benchmark.engine.sandbox.vocabulary import (
    APPOINTMENT_TYPES,
    MEDICATION_STATUSES,
    normalise_appointment_type,
    normalise_medication_status,
    pcp_specialties_for_age,
)

if TYPE_CHECKING:
    from benchmark.engine.sandbox.state import SandboxState

Content = dict[str, Any]
WriteAction = dict[str, Any] | None

MAX_LISTED_SLOTS = 40
RESPONSE_TIMES = {"routine": "within 24-48 hours", "urgent": "within 4 hours"}
MINUTES_PER_QUEUE_PLACE = 10
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_ZIP = re.compile(r"^\d{5}(-\d{4})?$")
_STATE = re.compile(r"^[A-Za-z]{2}$")


# Appointments


def list_doctors(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    if "specialty" not in args:
        return {"doctors": [doctor_view(sandbox, p) for p in sandbox.providers]}, None
    wanted = resolve_specialties(args["specialty"])
    providers = [p for p in sandbox.providers if p["specialty"] in wanted]
    content: Content = {"doctors": [doctor_view(sandbox, p) for p in providers]}
    if not providers:
        content["note"] = f"No clinician of that specialty ({', '.join(wanted)}) in the network."
    return content, None


def get_available_appointments(
    sandbox: SandboxState, args: dict[str, Any]
) -> tuple[Content, WriteAction]:
    start = parse_date("start_date", args["start_date"], sandbox.window).isoformat()
    end = parse_date("end_date", args["end_date"], sandbox.window).isoformat()
    if end < start:
        raise ToolError(f"'end_date' {end} is before 'start_date' {start}.")
    doctor_ids = {p["id"] for p in sandbox.providers}
    if "specialty" in args:
        wanted = resolve_specialties(args["specialty"])
        doctor_ids = {p["id"] for p in sandbox.providers if p["specialty"] in wanted}
    if "doctor" in args:
        doctor_ids &= {resolve_doctor(sandbox, args["doctor"])["id"]}
    found = [
        slot
        for slot in sandbox.slots
        if slot["status"] == "open"
        and start <= slot["date"] <= end
        and slot["doctor_id"] in doctor_ids
    ]
    content: Content = {
        "start_date": start,
        "end_date": end,
        "total": len(found),
        "slots": [slot_view(sandbox, slot) for slot in found[:MAX_LISTED_SLOTS]],
    }
    if len(found) > MAX_LISTED_SLOTS:
        content["note"] = (
            f"Showing the first {MAX_LISTED_SLOTS} of {len(found)}; narrow the dates or name a "
            "doctor or specialty to see the rest."
        )
    elif not found:
        content["note"] = "No open slot matches; try other dates or another clinician."
    return content, None


def schedule_appointment(
    sandbox: SandboxState, args: dict[str, Any]
) -> tuple[Content, WriteAction]:
    appointment_type = _appointment_type(args["appointment_type"])
    preferred_day = parse_date("preferred_date", args["preferred_date"], sandbox.window)
    if "slot_id" in args:
        doctor = resolve_doctor(sandbox, args["doctor"]) if "doctor" in args else None
        slot = _chosen_slot(sandbox, args["slot_id"], doctor, appointment_type)
        if slot["date"] != preferred_day.isoformat():
            raise ToolError(
                f"Slot {slot['id']} is on {slot['date']}, not on 'preferred_date' "
                f"{preferred_day.isoformat()}."
            )
        changes: list[dict[str, str]] = []
    else:
        doctor = resolve_doctor(sandbox, args.get("doctor", "PCP"))
        time_range = (
            parse_time_preference(args["preferred_time"]) if "preferred_time" in args else None
        )
        slot, changes = closest_slot(sandbox, doctor, appointment_type, preferred_day, time_range)
    appointment = _book(sandbox, slot, args["reason"])
    content: Content = {"appointment": appointment, "exact_match": not changes}
    if changes:
        content["changes"] = changes
        content["note"] = (
            "No slot matched the request exactly, so the closest open slot was booked "
            "instead; tell the patient what changed."
        )
    write_action = {
        "action": "booked",
        **{key: appointment[key] for key in ("appointment_id", "slot_id", "appointment_type")},
        **{key: appointment[key] for key in ("doctor_id", "doctor", "specialty", "date", "time")},
        "exact_match": not changes,
    }
    return content, write_action


def _appointment_type(text: str) -> str:
    appointment_type = normalise_appointment_type(text)
    if appointment_type is None:
        raise ToolError(
            f"Unknown appointment type {text[:40]!r}; use one of: {', '.join(APPOINTMENT_TYPES)}."
        )
    return appointment_type


def _chosen_slot(
    sandbox: SandboxState, slot_id: str, doctor: dict[str, Any] | None, appointment_type: str
) -> dict[str, Any]:
    slot = sandbox.slots_by_id.get(slot_id)
    if slot is None:
        raise ToolError(
            f"There is no slot {slot_id[:80]!r}; take a slot_id from get_available_appointments."
        )
    if slot["status"] != "open":
        raise ToolError(f"Slot {slot_id} is already booked; choose another open slot.")
    if doctor is not None and slot["doctor_id"] != doctor["id"]:
        raise ToolError(f"Slot {slot_id} is not with {doctor['name']} ({doctor['id']}).")
    if slot["type"] != appointment_type:
        raise ToolError(
            f"Slot {slot_id} is a {slot['type']} slot, but a {appointment_type} visit was asked "
            "for."
        )
    return slot


def _book(sandbox: SandboxState, slot: dict[str, Any], reason: str) -> dict[str, Any]:
    provider = sandbox.providers_by_id[slot["doctor_id"]]
    office = sandbox.offices_by_id[slot["office_id"]]
    slot["status"] = "booked"
    appointment = {
        "appointment_id": f"appt-{len(sandbox.appointments) + 1}",
        "slot_id": slot["id"],
        "date": slot["date"],
        "time": slot["time"],
        "appointment_type": slot["type"],
        "doctor_id": provider["id"],
        "doctor": provider["name"],
        "specialty": provider["specialty"],
        "office": office["name"],
        "office_address": office["address"],
        "reason": reason,
        "status": "scheduled",
    }
    sandbox.appointments.append(appointment)
    return dict(appointment)


def cancel_appointment(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    appointment_id = args["appointment_id"].lower()
    appointment = next(
        (a for a in sandbox.appointments if a["appointment_id"] == appointment_id), None
    )
    if appointment is None:
        raise ToolError(
            f"The patient has no appointment {args['appointment_id'][:80]!r}.",
            scheduled_appointment_ids=[a["appointment_id"] for a in _scheduled(sandbox)],
        )
    if appointment["status"] == "cancelled":
        raise ToolError(f"Appointment {appointment_id} is already cancelled.")
    appointment["status"] = "cancelled"
    sandbox.slots_by_id[appointment["slot_id"]]["status"] = "open"
    write_action = {
        "action": "cancelled",
        **{key: appointment[key] for key in ("appointment_id", "slot_id", "appointment_type")},
        **{key: appointment[key] for key in ("doctor_id", "doctor", "date", "time")},
    }
    return {"cancelled": dict(appointment)}, write_action


def list_appointments(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    scheduled = sorted(_scheduled(sandbox), key=lambda a: (a["date"], a["time"]))
    return {"appointments": [dict(a) for a in scheduled]}, None


def _scheduled(sandbox: SandboxState) -> list[dict[str, Any]]:
    return [a for a in sandbox.appointments if a["status"] == "scheduled"]


# Prescriptions


def list_medications(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    statuses = MEDICATION_STATUSES
    if "status" in args:
        status = normalise_medication_status(args["status"])
        if status is None:
            raise ToolError(
                f"Unknown status {args['status'][:40]!r}; use one of: "
                f"{', '.join(MEDICATION_STATUSES)}."
            )
        statuses = (status,)
    groups = {status: [] for status in statuses}
    for medication in sandbox.medications:
        if medication["status"] in groups:
            groups[medication["status"]].append(_medication_view(medication))
    return groups, None


def _medication_view(medication: dict[str, Any]) -> dict[str, Any]:
    view = {key: value for key, value in medication.items() if key != "id"}
    return {"medication_id": medication["id"], **view}


def request_refill(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    medication = find_medication(sandbox, args["medication_name"])
    name = medication["name"]
    if medication["status"] == "past":
        raise ToolError(
            f"{name} is a past medication and cannot be refilled; request a new prescription "
            "instead."
        )
    if medication["refills_remaining"] <= 0:
        raise ToolError(
            f"{name} has no refills remaining; the patient needs to contact their provider "
            "(for example by messaging the PCP) to renew it."
        )
    pharmacy = _preferred_pharmacy_name(sandbox)
    if pharmacy is None:
        raise ToolError(
            "No preferred pharmacy is on file; set one with update_pharmacy before refilling."
        )
    medication["refills_remaining"] -= 1
    medication["last_filled"] = sandbox.today.isoformat()
    medication["pharmacy"] = pharmacy
    write_action = {
        "action": "refill_requested",
        "medication_id": medication["id"],
        "medication": name,
        "dosage": medication.get("dosage"),
        "refills_remaining": medication["refills_remaining"],
        "last_filled": medication["last_filled"],
        "pharmacy": pharmacy,
    }
    return {"refill": "sent to pharmacy", "medication": _medication_view(medication)}, write_action


def _preferred_pharmacy_name(sandbox: SandboxState) -> str | None:
    pharmacy = sandbox.profile.get("preferred_pharmacy")
    name = pharmacy.get("name") if isinstance(pharmacy, dict) else None
    return name if isinstance(name, str) and name.strip() else None


def request_new_prescription(
    sandbox: SandboxState, args: dict[str, Any]
) -> tuple[Content, WriteAction]:
    name = args["medication_name"]
    for existing in medications_named(sandbox, " ".join(name.lower().split())):
        if existing["status"] == "active":
            raise ToolError(
                f"{existing['name']} is already an active medication; use request_refill."
            )
        if existing["status"] == "under_renewal":
            raise ToolError(f"{existing['name']} is already waiting for provider review.")
    pcp = sandbox.pcp
    medication = {
        "id": f"med-{len(sandbox.medications) + 1}",
        "name": name,
        "dosage": "TBD",
        "frequency": "TBD",
        "status": "under_renewal",
        "refills_remaining": 0,
        "last_filled": None,
        "pharmacy": _preferred_pharmacy_name(sandbox),
        "reason": args["reason"],
        "requested_dosage": args.get("dosage"),
        "requested_frequency": args.get("frequency"),
        "requested_on": sandbox.today.isoformat(),
        "reviewer": pcp["name"] if pcp else None,
    }
    sandbox.medications.append(medication)
    write_action = {
        "action": "new_prescription_requested",
        "medication_id": medication["id"],
        "medication": name,
        "reason": args["reason"],
        "requested_dosage": medication["requested_dosage"],
        "requested_frequency": medication["requested_frequency"],
    }
    content = {
        "medication": _medication_view(medication),
        "note": "A provider must review the request before it can be filled.",
    }
    return content, write_action


# Telehealth


def message_pcp(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    pcp = assigned_pcp(sandbox)
    optional = ("symptom_onset", "severity", "relevant_medications", "additional_context")
    message = {
        "message_id": f"msg-{len(sandbox.messages) + 1}",
        "doctor_id": pcp["id"],
        "doctor": pcp["name"],
        "reason": args["reason"],
        "message": args["message"],
        "urgency": args["urgency"],
        **{key: args[key] for key in optional if key in args},
        "sent_at": sandbox.now.isoformat(),
        "expected_response": RESPONSE_TIMES[args["urgency"]],
    }
    sandbox.messages.append(message)
    write_action = {
        "action": "message_sent",
        **{key: message[key] for key in ("message_id", "doctor_id", "doctor", "urgency")},
        "reason": args["reason"],
    }
    content = {
        "sent": dict(message),
        "note": "Messages are not for emergencies: for one, call 911 or go to the ER.",
    }
    return content, write_action


def join_virtual_call_queue(
    sandbox: SandboxState, args: dict[str, Any]
) -> tuple[Content, WriteAction]:
    doctor = resolve_doctor(sandbox, args["doctor"])
    for entry in sandbox.queue_entries:
        if entry["doctor_id"] == doctor["id"]:
            raise ToolError(
                f"The patient is already in {doctor['name']}'s queue at position "
                f"{entry['position']}."
            )
    position = sandbox.queue_lengths[doctor["id"]] + 1
    sandbox.queue_lengths[doctor["id"]] = position
    entry = {
        "queue_id": f"queue-{len(sandbox.queue_entries) + 1}",
        "doctor_id": doctor["id"],
        "doctor": doctor["name"],
        "position": position,
        "estimated_wait_minutes": position * MINUTES_PER_QUEUE_PLACE,
        "reason": args.get("reason"),
        "joined_at": sandbox.now.isoformat(),
    }
    sandbox.queue_entries.append(entry)
    write_action = {
        "action": "queued",
        **{key: entry[key] for key in ("queue_id", "doctor_id", "doctor", "position")},
    }
    return {"queue_entry": dict(entry)}, write_action


# Profile


def get_profile(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    pcp = sandbox.pcp
    care_team = {"primary_care_provider": doctor_view(sandbox, pcp) if pcp else None}
    return {"profile": {**sandbox.profile, "care_team": care_team}}, None


def update_pcp(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    doctor = resolve_doctor(sandbox, args["doctor"])
    eligible = pcp_specialties_for_age(patient_age(sandbox.profile))
    if doctor["specialty"] not in eligible:
        raise ToolError(
            f"{doctor['name']} practises {doctor['specialty']}; a PCP for this patient must "
            f"practise {' or '.join(eligible)}.",
            eligible_doctors=[
                {"id": p["id"], "name": p["name"], "specialty": p["specialty"]}
                for p in sandbox.providers
                if p["specialty"] in eligible
            ],
        )
    previous = sandbox.pcp
    if previous is not None and previous["id"] == doctor["id"]:
        return {"pcp": doctor_view(sandbox, doctor), "note": "Already the patient's PCP."}, None
    sandbox.pcp_id = doctor["id"]
    write_action = {
        "action": "pcp_updated",
        "previous_doctor_id": previous["id"] if previous else None,
        "previous_doctor": previous["name"] if previous else None,
        "doctor_id": doctor["id"],
        "doctor": doctor["name"],
    }
    content = {
        "previous_pcp": write_action["previous_doctor"],
        "pcp": doctor_view(sandbox, doctor),
    }
    return content, write_action


def update_pharmacy(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    pharmacy = {
        "name": args["name"],
        "address": args.get("address"),
        "phone": _phone(args["phone"]) if "phone" in args else None,
    }
    previous = sandbox.profile.get("preferred_pharmacy")
    sandbox.profile["preferred_pharmacy"] = pharmacy
    write_action = {"action": "pharmacy_updated", "previous": previous, "pharmacy": pharmacy}
    return {"previous_pharmacy": previous, "preferred_pharmacy": pharmacy}, write_action


def update_insurance(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    insurance = {"provider": args["provider"], "plan_type": args["plan_type"]}
    previous = sandbox.profile.get("insurance")
    sandbox.profile["insurance"] = insurance
    write_action = {"action": "insurance_updated", "previous": previous, "insurance": insurance}
    return {"previous_insurance": previous, "insurance": insurance}, write_action


def update_contact_info(sandbox: SandboxState, args: dict[str, Any]) -> tuple[Content, WriteAction]:
    if not args:
        raise ToolError("Give at least one of phone, email or address to change.")
    updates = _contact_updates(sandbox, args)
    changes = {
        field: {"previous": sandbox.profile.get(field), "new": value}
        for field, value in updates.items()
        if sandbox.profile.get(field) != value
    }
    if not changes:
        return {"changes": {}, "note": "Those details are already on file."}, None
    for field in changes:
        sandbox.profile[field] = updates[field]
    return {"changes": changes}, {"action": "contact_updated", "changes": changes}


def _contact_updates(sandbox: SandboxState, args: dict[str, Any]) -> dict[str, Any]:
    updates: dict[str, Any] = {}
    if "phone" in args:
        updates["phone"] = _phone(args["phone"])
    if "email" in args:
        if not _EMAIL.match(args["email"]):
            raise ToolError(f"{args['email'][:80]!r} is not a valid email address.")
        updates["email"] = args["email"]
    if "address" in args:
        updates["address"] = _address(sandbox, args["address"])
    return updates


def _address(sandbox: SandboxState, parts: dict[str, str]) -> dict[str, Any]:
    if "state" in parts and not _STATE.match(parts["state"]):
        raise ToolError("'address.state' must be a two-letter state code such as TX.")
    if "zip" in parts and not _ZIP.match(parts["zip"]):
        raise ToolError("'address.zip' must be a five-digit ZIP code.")
    current = sandbox.profile.get("address")
    address = dict(current) if isinstance(current, dict) else {}
    address.update(parts)
    if "state" in parts:
        address["state"] = parts["state"].upper()
    return address


def _phone(text: str) -> str:
    phone = normalise_phone(text)
    if phone is None:
        raise ToolError(f"{text[:40]!r} is not a 10-digit US phone number.")
    return phone


HANDLERS: dict[str, Callable[[SandboxState, dict[str, Any]], tuple[Content, WriteAction]]] = {
    "list_doctors": list_doctors,
    "get_available_appointments": get_available_appointments,
    "schedule_appointment": schedule_appointment,
    "cancel_appointment": cancel_appointment,
    "list_appointments": list_appointments,
    "list_medications": list_medications,
    "request_refill": request_refill,
    "request_new_prescription": request_new_prescription,
    "message_pcp": message_pcp,
    "join_virtual_call_queue": join_virtual_call_queue,
    "get_profile": get_profile,
    "update_pcp": update_pcp,
    "update_pharmacy": update_pharmacy,
    "update_insurance": update_insurance,
    "update_contact_info": update_contact_info,
}
