"""How the scripted patient answers each assistant message: pick, consent, answer, follow up,
re-ask or leave."""

from __future__ import annotations

import re

from benchmark.engine.agents.offline_patient.facts import (
    ANSWERS,
    need_sentence,
    onset_sentence,
    red_flag_sentence,
    symptom_sentence,
)
from benchmark.engine.agents.offline_patient.patient import (
    CLOCK_TIME,
    FOLLOW_UPS,
    OPTION_LINE,
    PREFERRED_TYPES,
    Patient,
    handled,
    kind_of,
    preference_key,
)
from benchmark.engine.agents.prompts import TERMINATION_TOKEN

THANKS = "Thank you, that is everything I needed."
GOODBYES = (
    THANKS,
    "Thanks.",
    "Thank you so much, that really helps. That's everything for now.",
    "That still doesn't answer my question. I'll call the clinic myself. Goodbye.",
    "Okay... I'll try calling the office instead. Goodbye.",
)
RE_ASK_LEADS = ("But I'm still worried.", "Sorry, that doesn't really answer it.")
SATISFIED_BY_STYLE = {"low": GOODBYES[1], "medium": GOODBYES[0], "high": GOODBYES[2]}
DISSATISFIED_BY_COOPERATION = {"low": GOODBYES[3], "medium": GOODBYES[4], "high": GOODBYES[4]}
# About waiting for a reply, which someone told to call 911 now does not ask.
MESSAGE_FOLLOW_UPS = ("reply_time", "no_reply")
# Questions that fill a gap in what the assistant said; they do not use up the patient's
# patience for follow-up questions.
CLARIFICATIONS = ("details", "visit_type", "cannot_wait")
# What the assistant says it did -> the practical questions that follow; first match wins.
ACTION_FOLLOW_UPS = (
    ("in the queue", ("queue_wait", "call_drops")),
    ("booked", ("prepare", "change_later")),
    ("appointment", ("prepare", "change_later")),
    ("refill", ("pickup", "cost")),
    ("message", ("reply_time", "no_reply")),
    ("updated", ("confirmation", "what_changes")),
)


def reply(p: Patient) -> str:
    if p.own[-1] in GOODBYES:
        return TERMINATION_TOKEN
    text = p.heard[-1] if p.heard else ""
    if p.turn > p.temper.last_turn:
        return goodbye(p, satisfied=p.helped and not p.unanswered)
    kind = kind_of(text)
    if kind == "options":
        return choose(p, OPTION_LINE.findall(text))
    if kind == "confirm":
        return consent(p)
    if kind == "question":
        return answer_questions(p, text)
    return after_statement(p, text)


def choose(p: Patient, options: list[str]) -> str:
    sooner = "Is there anything sooner? I really don't want to wait."
    if p.temper.urgency == "high" and not any(sooner in message for message in p.own):
        return sooner
    wanted = PREFERRED_TYPES.get(preference_key(p.hints), ())
    matching = [o for o in options if any(kind in o.lower() for kind in wanted)] or options
    index = {"high": 0, "low": len(matching) - 1}.get(
        p.temper.urgency, p.choose_index("option", len(matching))
    )
    choice = matching[index]
    if p.temper.communication_style == "low":
        return f"{choice}."
    return f"I'll take this one: {choice}."


def consent(p: Patient) -> str:
    why = "Before I agree: why is that the right step for me?"
    if p.temper.cooperation == "low" and not any(why in message for message in p.own):
        return why
    return {"low": "Fine. Go ahead.", "high": "Yes, please go ahead. Thank you."}.get(
        p.temper.communication_style, "Yes, please go ahead."
    )


def answer_questions(p: Patient, question: str) -> str:
    """Answer the assistant's questions from the story and profile, as the traits allow."""
    asked = question.lower()
    parts = [answer(p) for pattern, answer in ANSWERS if re.search(pattern, asked)]
    parts = [part for part in dict.fromkeys(parts) if part] or [symptom_sentence(p)]
    if symptom_sentence(p) in parts:  # it already says since when
        parts = [part for part in parts if part != onset_sentence(p)]
    if p.red_flag and not p.red_flag_told and not any(p.red_flag in part for part in parts):
        parts.append(red_flag_sentence(p))
    if p.temper.communication_style == "low":
        parts = parts[:2]
    if p.temper.anxiety == "high" and p.clinical and not p.asked("serious"):
        parts.append(p.follow_up("serious"))
    return " ".join(parts)


def after_statement(p: Patient, text: str) -> str:
    unanswered = unanswered_follow_up(p, text)
    if unanswered and will_re_ask(p, unanswered):
        worry = p.temper.anxiety == "high" and unanswered in ("serious", "worse")
        lead = RE_ASK_LEADS[0] if worry else RE_ASK_LEADS[1]
        return f"{lead} {p.follow_up(unanswered)}"
    if unanswered and gives_up(p):
        terse = p.temper.patience == "low" and p.temper.communication_style == "low"
        if not terse and not p.asked("human"):
            return p.follow_up("human")
        return goodbye(p, satisfied=False)
    if p.wants_to_explain and not any(symptom_sentence(p) in message for message in p.own):
        flag = red_flag_sentence(p) if p.red_flag and not p.red_flag_told else ""
        return f"I should say a bit more. {symptom_sentence(p)} {flag}".strip()
    if p.red_flag and not p.red_flag_told:
        return f"There's something else I should mention: {red_flag_sentence(p, lead='')}"
    if not p.helped:
        restated = any(message.startswith("So can you help") for message in p.own)
        if restated:
            return goodbye(p, satisfied=False)
        return f"So can you help with this? {need_sentence(p)}"
    asked = sum(p.asked(key) for key in FOLLOW_UPS if key not in CLARIFICATIONS)
    key = next((k for k in follow_up_order(p) if not p.asked(k)), None)
    if key is None or asked >= p.temper.follow_up_budget:
        return goodbye(p, satisfied=not p.unanswered)
    return p.follow_up(key)


def unanswered_follow_up(p: Patient, text: str) -> str | None:
    """The follow-up the patient just asked, when the answer does not address it."""
    last = p.own[-1]
    key = next((k for k in FOLLOW_UPS if p.follow_up(k) in last), None)
    if key is None or FOLLOW_UPS[key].answered_by.search(text):
        return None
    return key


def gives_up(p: Patient) -> bool:
    """Whether a patient left without an answer stops asking: a cooperative one tries one more
    question first; the others ask for a person (unless impatient and terse) or leave."""
    return p.temper.cooperation != "high" or len(p.unanswered) > 1


def will_re_ask(p: Patient, key: str) -> bool:
    """Once per conversation, unless cooperation is low (they leave instead)."""
    re_asked = any(message.startswith(RE_ASK_LEADS) for message in p.own)
    return not re_asked and p.temper.cooperation != "low"


def follow_up_order(p: Patient) -> list[str]:
    """The follow-up questions this patient would ask now, most pressing first."""
    reports = [text.lower() for text in reversed(p.heard) if handled(text)]
    actions = next(
        (keys for text in reports for marker, keys in ACTION_FOLLOW_UPS if marker in text), ()
    )
    booked_without_time = "prepare" in actions and not any(
        CLOCK_TIME.search(text) for text in reports
    )
    urgent = p.urgent_task or p.red_flag_told
    sent_to_care = any(re.search(r"\b(?:911|988)\b", text) for text in p.heard)
    wanted = (
        ("cannot_wait", p.urgent_task and not sent_to_care),
        ("details", booked_without_time),  # anyone asks when a booking comes without a time
        ("visit_type", "prepare" in actions and not names_visit_type(p, reports)),
        ("proof", p.temper.cooperation == "low" and bool(actions)),
        ("call_911", "emergency" in p.task or p.red_flag_told),
        ("take_anything", "emergency" in p.task or p.red_flag_told),
        ("crisis_wait", "crisis" in p.task),
        ("serious", p.clinical and p.temper.anxiety != "low" and not urgent),
        ("plain", p.temper.health_literacy == "low"),
        ("worse", p.clinical and not urgent and (p.health_concern or "prepare" in actions)),
        *((action, not (urgent and action in MESSAGE_FOLLOW_UPS)) for action in actions),
        (
            "keep_taking",
            p.seed.get("task_category") == "medication" or p.temper.health_literacy == "high",
        ),
    )
    return [key for key, applies in wanted if applies]


def names_visit_type(p: Patient, reports: list[str]) -> bool:
    """Whether the booking report says what kind of visit it is (or none was asked for)."""
    wanted = PREFERRED_TYPES.get(preference_key(p.hints))
    return not wanted or any(kind in text for text in reports for kind in wanted)


def goodbye(p: Patient, *, satisfied: bool) -> str:
    if satisfied:
        return SATISFIED_BY_STYLE[p.temper.communication_style]
    return DISSATISFIED_BY_COOPERATION[p.temper.cooperation]
