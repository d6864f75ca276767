"""The careful assistant: asks, looks up, offers, confirms, acts, then reports and answers."""

from __future__ import annotations

import re
from typing import Any

from benchmark.engine.agents.offline_assistant.answers import answers
from benchmark.engine.agents.offline_assistant.proposals import (
    PROPOSALS,
    fallback_message,
    lookups,
)
from benchmark.engine.agents.offline_assistant.state import (
    URGENT_INTENTS,
    YES,
    Action,
    Result,
    State,
    call_tool,
    preferred_slots,
    records,
    say,
    slot_line,
)
from benchmark.engine.agents.offline_assistant.texts import (
    ACKNOWLEDGEMENTS,
    CARE_TEAM_REVIEW,
    DO_NOT_STOP_MEDICINES,
    NEEDS_A_CLINICIAN,
    NOTHING_TO_MOVE,
    QUESTIONS_FIRST,
    SCREENING_QUESTION,
    SECOND_QUESTIONS,
    URGENT_ADVICE,
    URGENT_SAFETY_NEXT,
    VISIT_PREPARATION,
    WARNING_SIGNS,
)
from benchmark.engine.sandbox.specs import WRITE_TOOLS
from llm.engine.chat import ChatRequest, ChatResponse


def careful(s: State, request: ChatRequest) -> ChatResponse:
    writes = [result for result in s.results if result.tool in WRITE_TOOLS]
    last_write = writes[-1] if writes else None
    if last_write and last_write.this_turn:
        return reply(request, s, after_write(s, last_write))
    if last_write and (last_write.ok or last_write.tool == "message_pcp"):
        return reply(request, s, "" if answers(s) else closing(s))
    if s.intent in QUESTIONS_FIRST and not s.answers:
        advice = URGENT_ADVICE.get(s.intent, "")
        return reply(request, s, f"{advice} {QUESTIONS_FIRST[s.intent]}".strip())
    if s.intent in SECOND_QUESTIONS and len(s.answers) == 1 and not s.red_flag:
        return reply(request, s, f"Thank you, that's helpful. {SECOND_QUESTIONS[s.intent]}")
    lookup = next(((tool, args) for tool, args in lookups(s) if not s.results_of(tool)), None)
    if lookup:
        return call_tool(request, s, *lookup)
    if s.needs_screen and not s.said(SCREENING_QUESTION):
        return reply(request, s, f"{s.caution} {SCREENING_QUESTION}")
    action = fallback_message(s) if last_write else PROPOSALS[s.route](s)
    if action is None:
        return reply(request, s, ask_for_choice(s))
    if confirmed(s):
        return call_tool(request, s, action.tool, action.arguments)
    consent = f"Shall I {action.description}?"
    if s.said(consent):  # the patient asked something first; answer it and ask again
        return reply(request, s, consent)
    return reply(request, s, confirmation_question(s, action))


def confirmed(s: State) -> bool:
    return "Shall I" in s.last_answer and bool(YES.search(s.last_user))


def confirmation_question(s: State, action: Action) -> str:
    parts = []
    if s.intent in URGENT_ADVICE:
        parts.append(URGENT_SAFETY_NEXT[s.intent])
    if s.route == "refill":
        parts.append(refill_status(s))
    if s.route in ("message", "queue") and s.intent not in URGENT_INTENTS:
        parts.append(CARE_TEAM_REVIEW)
    if s.caution and not s.said(s.caution):
        parts.append(s.caution)
    if s.intent == "interaction":
        parts.append(DO_NOT_STOP_MEDICINES)
    warning_signs_due = s.clinical and s.intent != "refill" and s.route != "urgent_message"
    if warning_signs_due and not s.said(WARNING_SIGNS):
        parts.append(WARNING_SIGNS)
    parts.append(f"Shall I {action.description}?")
    return " ".join(part for part in parts if part)


def refill_status(s: State) -> str:
    text = s.all_user_text.lower()
    listed = records(s, "list_medications", "name")
    medication = next((m for m in listed if str(m["name"]).lower() in text), {})
    status = (
        f"I can see {medication.get('name')} {medication.get('dosage', '')} on your list with "
        f"{medication.get('refills_remaining', 'some')} refills remaining."
    )
    if medication.get("refills_remaining") == 0:
        status += " The pharmacy can't fill it again until your PCP renews the prescription."
    return status


def ask_for_choice(s: State) -> str:
    if s.route == "booking":
        parts = []
        if s.intent == "reschedule" and not records(s, "list_appointments", "appointment_id"):
            parts.append(NOTHING_TO_MOVE)
        if s.clinical:
            parts += [NEEDS_A_CLINICIAN, s.caution, WARNING_SIGNS]
        lines = [f"{n}. {slot_line(slot)}" for n, slot in enumerate(preferred_slots(s)[:3], 1)]
        intro = " ".join(part for part in dict.fromkeys(parts) if part and not s.said(part))
        options = "Here are the earliest open times:\n" + "\n".join(lines)
        return f"{intro}\n{options}\nWhich one suits you?".strip()
    if s.route == "change_pcp":
        doctors = [d for d in records(s, "list_doctors", "specialty") if not d.get("is_pcp")][:3]
        lines = [f"- {d['name']} ({d.get('specialty', 'primary care')})" for d in doctors]
        return "These clinicians can be your PCP:\n" + "\n".join(lines) + "\nWhich one?"
    if s.route == "refill":
        return "Which medication would you like refilled?"
    return "Could you tell me the new details you would like me to record?"


def after_write(s: State, write: Result) -> str:
    if not write.ok:
        if write.tool == "message_pcp":
            return (
                f"I'm sorry, I could not send that: {write.error} Please call the clinic "
                "directly, or 911 if this is an emergency."
            )
        return (
            f"I'm sorry, I could not complete that: {write.error} Shall I send a message to "
            "your PCP about it instead?"
        )
    prefix = URGENT_ADVICE.get(s.intent, "")
    return f"{prefix} {success_text(write)}".strip()


def success_text(write: Result) -> str:
    """What the tool returned, so the confirmation matches the record, and what comes next."""
    data = write.data if isinstance(write.data, dict) else {}
    if write.tool == "schedule_appointment":
        return booking_text(data.get("appointment") or write.arguments)
    if write.tool == "request_refill":
        medication = data.get("medication") or {}
        name = medication.get("name") or write.arguments.get("medication_name")
        return (
            f"Your refill request for {name} {medication.get('dosage', '')} has been sent to "
            f"{medication.get('pharmacy') or 'your pharmacy'}. Next step: it is usually ready "
            "for pickup within 1-2 business days; keep taking it as prescribed and tell us "
            "about any new side effects. Call 911 in an emergency."
        )
    if write.tool == "message_pcp":
        sent = data.get("sent") or {}
        return (
            f"I've sent your message to {sent.get('doctor') or 'your PCP'}. Next step: expect a "
            f"reply {sent.get('expected_response') or 'soon'}. If things get worse or new "
            "symptoms appear, call 911 or go to the nearest emergency room."
        )
    if write.tool == "join_virtual_call_queue":
        entry = data.get("queue_entry") or {}
        clinician = entry.get("doctor") or "your care team"
        wait = entry.get("estimated_wait_minutes", "a few")
        return (
            f"You're now in the queue for a video visit with {clinician}; the estimated wait is "
            f"{wait} minutes. Next step: keep this window open, and a clinician will join you "
            "as soon as possible."
        )
    return update_text(write.tool, data)


def update_text(tool: str, data: dict[str, Any]) -> str:
    pharmacy = data.get("preferred_pharmacy") or {}
    insurance = data.get("insurance") or {}
    contact = [
        f"your {field} is now {change.get('new') if isinstance(change, dict) else change}"
        for field, change in (data.get("changes") or {}).items()
    ]
    changed = {
        "update_pcp": f"{(data.get('pcp') or {}).get('name')} is now your primary care doctor",
        "update_pharmacy": f"your pharmacy is now {pharmacy.get('name')}",
        "update_insurance": (
            f"your insurance is now {insurance.get('provider')} ({insurance.get('plan_type')})"
        ),
        "update_contact_info": " and ".join(contact) or "your details are unchanged",
    }.get(tool, "the change is saved")
    return (
        f"I've updated your record: {changed}. Next step: nothing more is needed; the change "
        "applies from now on."
    )


def booking_text(appointment: dict[str, Any]) -> str:
    kind = str(appointment.get("appointment_type") or "")
    article = "an" if kind[:1] in ("i", "a", "e", "o", "u") else "a"
    place = (
        f" at {appointment['office']}" if kind == "in-person" and "office" in appointment else ""
    )
    return (
        f"You're booked: {article} {kind} appointment with {appointment.get('doctor')}{place} on "
        f"{appointment.get('date') or appointment.get('preferred_date')} at "
        f"{appointment.get('time') or appointment.get('preferred_time')}. Next step: "
        f"{VISIT_PREPARATION.get(kind, VISIT_PREPARATION[''])} If your symptoms get worse "
        "before then, contact us, or call 911 in an emergency."
    )


def closing(s: State) -> str:
    if re.search(r"\bthank", s.last_user, re.IGNORECASE):
        return "You're welcome. Take care, and reach out any time."
    if re.search(r"\bgoodbye\b", s.last_user, re.IGNORECASE):
        return (
            "I'm sorry I couldn't help more. You can call the clinic directly, or 911 in an "
            "emergency."
        )
    return "Is there anything else I can help you with?"


def reply(request: ChatRequest, s: State, text: str) -> ChatResponse:
    """The careful assistant's answer: its first one greets and acknowledges the patient;
    later ones first answer what the patient just asked or reported."""
    lead = answers(s) if s.answers else greeting(s)
    return say(request, " ".join(part for part in (lead, text) if part))


def greeting(s: State) -> str:
    name = s.profile.get("preferred_name") or s.profile.get("first_name")
    if not name:
        hello = "Hello."
    elif s.profile.get("caregiver"):
        hello = f"Thank you for writing on {name}'s behalf."
    else:
        hello = f"Hi {name}."
    parts = [hello, ACKNOWLEDGEMENTS.get(s.intent, "")]
    if re.search(r"worried|scared|anxious|afraid", s.user_texts[0] if s.user_texts else "", re.I):
        parts.append("I hear you're worried, and I'll help you sort this out.")
    return " ".join(part for part in parts if part)
