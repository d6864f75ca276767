"""The specs of the 15 sandbox tools, exactly as the agent sees them.

Each description says what the tool does, what must hold before calling it, and what it
returns. The parameter schemas are also what the sandbox checks arguments against.
"""

from __future__ import annotations

from typing import Any

from benchmark.engine.sandbox.vocabulary import vocabulary
from llm.engine.chat import ToolSpec

_DATE = "A date written YYYY-MM-DD, inside the 14-day booking window that starts today."
_DOCTOR = (
    "The clinician: their id (e.g. 'dr-03'), their name, or 'PCP' for the patient's current "
    "primary care provider."
)
_PHONE = "A 10-digit US phone number; punctuation is ignored."


def _string(description: str, enum: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if enum:
        schema["enum"] = enum
    return schema


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _specialty_parameter() -> dict[str, Any]:
    return _string(
        "Optional filter. One of: "
        + ", ".join(vocabulary().names)
        + ". 'primary care' selects every primary-care specialty."
    )


def _appointment_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="list_doctors",
            description=(
                "List the clinicians in the patient's care network, optionally only one "
                "specialty. Returns each clinician's id, name, specialty, credentials, office "
                "(name, address, phone, hours) and whether they are the patient's PCP."
            ),
            parameters=_object({"specialty": _specialty_parameter()}),
        ),
        ToolSpec(
            name="get_available_appointments",
            description=(
                "Find open appointment slots between two dates (inclusive), optionally for one "
                "specialty or one clinician. Returns up to 40 slots, earliest first, each with "
                "slot_id, date, weekday, time, clinician, specialty, office and appointment_type "
                "(in-person, telehealth or phone), plus the total number found. Check "
                "availability here before scheduling."
            ),
            parameters=_object(
                {
                    "start_date": _string(_DATE),
                    "end_date": _string(_DATE + " Not before start_date."),
                    "specialty": _specialty_parameter(),
                    "doctor": _string("Optional. " + _DOCTOR),
                },
                required=("start_date", "end_date"),
            ),
        ),
        ToolSpec(
            name="schedule_appointment",
            description=(
                "Book an appointment for the patient. Check get_available_appointments first "
                "and pass the chosen slot_id; confirm the choice with the patient before "
                "booking. Without slot_id it books the open slot nearest the preferences. When "
                "nothing matches exactly it widens the search (nearby dates and times, other "
                "clinicians of the same specialty, then other appointment types) and books the "
                "closest slot; the result then has exact_match false and lists what changed, "
                "which you must tell the patient. Without doctor, the patient's PCP is used. "
                "Returns the appointment (appointment_id, date, time, clinician, office, "
                "appointment_type, reason)."
            ),
            parameters=_object(
                {
                    "appointment_type": _string(
                        "in-person, telehealth (video) or phone. Common synonyms such as "
                        "'virtual', 'video' or 'office visit' are understood."
                    ),
                    "preferred_date": _string(_DATE),
                    "preferred_time": _string(
                        "Optional. A clock time such as 09:30 or 2:30 pm, or morning, "
                        "afternoon or evening."
                    ),
                    "doctor": _string("Optional; defaults to the PCP. " + _DOCTOR),
                    "reason": _string("Why the patient needs the visit, in a sentence."),
                    "slot_id": _string(
                        "Optional. A slot_id from get_available_appointments; it must be open, "
                        "on preferred_date, of the requested type and with the doctor if given."
                    ),
                },
                required=("appointment_type", "preferred_date", "reason"),
            ),
        ),
        ToolSpec(
            name="cancel_appointment",
            description=(
                "Cancel one of the patient's scheduled appointments and release its slot. "
                "Verify the appointment_id with list_appointments first. Returns the cancelled "
                "appointment."
            ),
            parameters=_object(
                {"appointment_id": _string("An appointment_id from list_appointments.")},
                required=("appointment_id",),
            ),
        ),
        ToolSpec(
            name="list_appointments",
            description=(
                "List the patient's scheduled (not cancelled) appointments with appointment_id, "
                "date, time, clinician, office, appointment_type and reason."
            ),
            parameters=_object({}),
        ),
    ]


def _prescription_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="list_medications",
            description=(
                "List the patient's medications grouped by status: active, under_renewal "
                "(waiting for provider review) and past. Each has medication_id, name, dosage, "
                "frequency, refills_remaining, last_filled and pharmacy."
            ),
            parameters=_object(
                {"status": _string("Optional filter: active, under_renewal or past.")}
            ),
        ),
        ToolSpec(
            name="request_refill",
            description=(
                "Send a refill of an existing medication to the patient's preferred pharmacy. "
                "The name match is case-insensitive and may be partial; a medication_id also "
                "works. Refused, with the reason, when the medication is not on file, is a past "
                "medication (request a new prescription instead), has no refills left (the "
                "patient must contact their provider) or no preferred pharmacy is set. Returns "
                "the medication with its remaining refills and the pharmacy."
            ),
            parameters=_object(
                {"medication_name": _string("The medication's name (or medication_id).")},
                required=("medication_name",),
            ),
        ),
        ToolSpec(
            name="request_new_prescription",
            description=(
                "Ask the care team to prescribe a medication, for a new medication or one that "
                "is past. A provider must review it, so it is recorded as under_renewal with "
                "dosage and frequency 'TBD' until then. Refused for a medication that is "
                "already active or under review (use request_refill for active ones). Returns "
                "the new medication record."
            ),
            parameters=_object(
                {
                    "medication_name": _string("The medication requested."),
                    "reason": _string("Why the patient needs it."),
                    "dosage": _string("Optional. The dosage the patient asks for."),
                    "frequency": _string("Optional. The frequency the patient asks for."),
                },
                required=("medication_name", "reason"),
            ),
        ),
    ]


def _telehealth_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="message_pcp",
            description=(
                "Send a secure message to the patient's assigned PCP (and no one else). Routine "
                "messages are answered within 24-48 hours, urgent ones within 4 hours; neither "
                "is for emergencies, which belong with 911 or the emergency room. Refused when "
                "no PCP is assigned. Returns the message id, recipient and expected response "
                "time."
            ),
            parameters=_object(
                {
                    "reason": _string("Subject of the message, in a few words."),
                    "message": _string("The message to the PCP."),
                    "symptom_onset": _string("Optional. When the symptoms started."),
                    "severity": _string("Optional. How severe the symptoms are."),
                    "relevant_medications": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Optional. Names of medications that matter here.",
                    },
                    "additional_context": _string("Optional. Anything else the PCP should know."),
                    "urgency": _string("routine or urgent.", enum=["routine", "urgent"]),
                },
                required=("reason", "message", "urgency"),
            ),
        ),
        ToolSpec(
            name="join_virtual_call_queue",
            description=(
                "Put the patient in the video-visit queue of a clinician (or of their PCP). "
                "Refused if the patient is already waiting for that clinician. Returns the "
                "queue entry with position and estimated wait."
            ),
            parameters=_object(
                {
                    "doctor": _string(_DOCTOR),
                    "reason": _string("Optional. Why the patient wants the call."),
                },
                required=("doctor",),
            ),
        ),
    ]


def _profile_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            name="get_profile",
            description=(
                "Read the patient's record: demographics, contact details, emergency contact, "
                "insurance, preferred pharmacy, conditions, allergies and care team (PCP)."
            ),
            parameters=_object({}),
        ),
        ToolSpec(
            name="update_pcp",
            description=(
                "Make another clinician from the network (see list_doctors) the patient's PCP; "
                "later 'PCP' references mean the new one. The clinician must practise a "
                "primary-care specialty suited to the patient's age. Returns the previous and "
                "the new PCP."
            ),
            parameters=_object(
                {"doctor": _string("The new PCP: their id or name.")}, required=("doctor",)
            ),
        ),
        ToolSpec(
            name="update_pharmacy",
            description=(
                "Replace the patient's preferred pharmacy, where future refills are sent. "
                "Returns the previous and the new pharmacy."
            ),
            parameters=_object(
                {
                    "name": _string("Pharmacy name."),
                    "address": _string("Optional. Street address, city, state and ZIP."),
                    "phone": _string("Optional. " + _PHONE),
                },
                required=("name",),
            ),
        ),
        ToolSpec(
            name="update_insurance",
            description=(
                "Replace the patient's insurance on file. Use provider 'Self Pay' with "
                "plan_type 'none' for uninsured patients. Returns the previous and the new "
                "insurance."
            ),
            parameters=_object(
                {
                    "provider": _string("Insurance company, or 'Self Pay'."),
                    "plan_type": _string("Plan type, e.g. HMO, PPO, EPO, Medicare, Medicaid."),
                },
                required=("provider", "plan_type"),
            ),
        ),
        ToolSpec(
            name="update_contact_info",
            description=(
                "Change the patient's phone number, email and/or home address; give at least "
                "one. Address fields not given keep their current value. Returns the changed "
                "fields with their previous and new values."
            ),
            parameters=_object(
                {
                    "phone": _string("Optional. " + _PHONE),
                    "email": _string("Optional. Email address."),
                    "address": {
                        "type": "object",
                        "description": "Optional. Only the parts of the address that change.",
                        "properties": {
                            "street": _string("Street and number."),
                            "city": _string("City."),
                            "state": _string("Two-letter state code."),
                            "zip": _string("Five-digit ZIP code."),
                        },
                        "additionalProperties": False,
                    },
                }
            ),
        ),
    ]


def _build_specs() -> dict[str, ToolSpec]:
    specs = _appointment_specs() + _prescription_specs() + _telehealth_specs() + _profile_specs()
    return {spec.name: spec for spec in specs}


TOOL_SPECS: dict[str, ToolSpec] = _build_specs()

# The tools that change the sandbox (the rest only read it).
WRITE_TOOLS = frozenset(
    {
        "schedule_appointment",
        "cancel_appointment",
        "request_refill",
        "request_new_prescription",
        "message_pcp",
        "join_virtual_call_queue",
        "update_pcp",
        "update_pharmacy",
        "update_insurance",
        "update_contact_info",
    }
)


def tool_specs() -> tuple[ToolSpec, ...]:
    """All 15 tools, in a stable order: appointments, prescriptions, telehealth, profile."""
    return tuple(TOOL_SPECS.values())
