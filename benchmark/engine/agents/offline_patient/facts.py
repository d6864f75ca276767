"""What the scripted patient says about itself: its opening need and its answers to the
assistant's questions, drawn from the seed, the profile and the story."""

from __future__ import annotations

import re
from typing import Any

from benchmark.engine.agents.offline_patient.patient import (
    CARE_PREFERENCES,
    Patient,
    Temper,
    medicine_names,
    preference_key,
)

ADMINISTRATIVE_CATEGORIES = ("profile", "medication")
SEVERITY_WORDS = {
    "mild": "It's mild, but it isn't going away.",
    "moderate": "It's moderate; it gets in the way of the day.",
    "severe": "It's bad - the worst it has been.",
}
EMERGENCIES = (
    "tightness in {poss} chest and trouble breathing",
    "a crushing pain in {poss} chest that spreads to {poss} arm",
    "sudden weakness on one side and slurred speech",
)


def opening(p: Patient) -> str:
    need = need_sentence(p)
    preference = CARE_PREFERENCES.get(preference_key(p.hints), "")
    if p.seed.get("task_category") in ADMINISTRATIVE_CATEGORIES or p.urgent_task:
        preference = ""  # how to be seen is beside the point when updating a record
    if p.temper.communication_style == "low" and p.temper.patience == "low":
        return need  # no greeting, no context: just the request
    feeling = opening_feeling(p.temper)
    closing = opening_closing(p.temper)
    parts = (p.voice.speaker_intro, feeling, need, preference, closing)
    return "Hi. " + " ".join(part for part in parts if part)


def opening_feeling(temper: Temper) -> str:
    if temper.anxiety == "high":
        return "I'm really worried about this."
    if temper.health_literacy == "low":
        return "Sorry, I'm not sure I'm saying this right."
    if temper.anxiety == "low" and temper.urgency == "low":
        return "It's probably nothing much."
    return ""


def opening_closing(temper: Temper) -> str:
    if temper.urgency == "high":
        return "Please, I need help soon."
    if temper.cooperation == "low" and temper.health_literacy == "high":
        return "I'd like a clear answer, please."
    return ""


def need_sentence(p: Patient) -> str:
    voice, poss = p.voice, p.voice.possessive
    condition = str(p.seed.get("condition") or "health").lower()
    emergency = voice.fill(EMERGENCIES[p.choose_index("emergency", len(EMERGENCIES))])
    rules = (
        (
            ("emergency",),
            f"{voice.is_phrase} having {emergency} right now and it is getting worse fast.",
        ),
        (
            ("crisis",),
            f"{voice.is_phrase} in a very dark place and not safe with these thoughts right now.",
        ),
        (("refill",), f"I need a refill of {poss} {p.medicine}."),
        (("interaction",), f"Is it safe to take {interaction_pair(p.profile)} together?"),
        (("new_prescription",), f"I'd like a new prescription to help with {poss} {condition}."),
        (("side_effect",), f"I think {poss} {p.medicine} might be causing side effects."),
        (("dosage",), f"I have a question about how much of {poss} {p.medicine} to take."),
        (("change_pcp",), "I'd like to switch to a different primary care doctor."),
        (("referral",), f"I'd like a referral to a specialist for {poss} {condition}."),
        (("reschedule", "cancel"), f"I need to move {poss} upcoming appointment."),
        (("pharmacy",), f"I'd like to change {poss} pharmacy to Walgreens at 100 Main Street."),
        (("insurance",), f"{poss.capitalize()} insurance changed: it is now Aetna, PPO plan."),
        (("contact",), f"Please update {poss} phone number to {new_phone(p.profile)}."),
        (("test_results",), f"I have a question about {poss} recent test results for {condition}."),
        (
            ("symptom_assessment",),
            f"{voice.is_phrase} not feeling right; the symptoms from {poss} {condition} have "
            "been bothering me.",
        ),
        (
            ("scheduling", "follow_up", "discharge"),
            f"I need to book an appointment about {poss} {condition}.",
        ),
    )
    for keywords, sentence in rules:
        if any(keyword in p.task for keyword in keywords):
            return sentence
    return f"{voice.is_phrase} having trouble with {poss} {condition} and would like some help."


def onset_sentence(p: Patient) -> str:
    duration, _ = story_symptoms(p)
    if p.temper.symptom_clarity == "low":
        return "I'm not really sure when it started... a while back, I think."
    return f"It started about {duration} ago."


def severity_sentence(p: Patient) -> str:
    if p.temper.anxiety == "low" and p.temper.urgency == "low":
        return "It's not too bad, really."  # stoic patients play it down
    return SEVERITY_WORDS.get(str(p.seed.get("severity")), SEVERITY_WORDS["moderate"])


def alarm_signs(p: Patient) -> str:
    return red_flag_sentence(p) if p.red_flag else "No, nothing like that."


def symptom_sentence(p: Patient) -> str:
    _, sentence = story_symptoms(p)
    if p.temper.symptom_clarity == "low":
        return f"It's hard to describe, and it comes and goes... {sentence}"
    return sentence


def medicines_sentence(p: Patient) -> str:
    if p.temper.health_literacy == "low":
        return f"{p.voice.takes} a few pills; I don't remember all the names."
    medicines = ", ".join(medicine_names(p.profile, active_only=True)) or "nothing regular"
    return f"{p.voice.takes} {medicines}."


def preference_sentence(p: Patient) -> str:
    return CARE_PREFERENCES.get(preference_key(p.hints), "Any kind of visit is fine.")


def allergies_sentence(p: Patient) -> str:
    allergies = [str(a) for a in p.profile.get("allergies") or []]
    return f"Allergic to {', '.join(allergies)}." if allergies else "No allergies that I know of."


def changes_sentence(p: Patient) -> str:
    if p.red_flag:
        return red_flag_sentence(p)
    return f"Nothing new, and no changes to {p.voice.possessive} medicines."


def company_sentence(p: Patient) -> str:
    if p.voice.speaker_intro:
        return f"Yes, I'm with {p.voice.subject} now, and I can call."
    relation = (p.profile.get("emergency_contact") or {}).get("relationship") or "neighbour"
    if "crisis" in p.task:
        return f"I'm at home on my own. My {relation} could come over if I asked."
    if p.choose_index("company", 2):
        return f"My {relation} is here with me, and I can call."
    return "No, I'm on my own, but I can call."


def red_flag_sentence(p: Patient, lead: str = "Also, ") -> str:
    flag = p.red_flag
    if p.temper.anxiety == "low" and p.temper.urgency == "low":
        return f"Well, {flag}, but it's probably nothing."
    sentence = f"{lead}{flag}."
    return sentence[0].upper() + sentence[1:]


# Question in the assistant's words -> the fact that answers it.
ANSWERS = (
    (r"when did|how long|start", onset_sentence),
    (r"how bad|severe", severity_sentence),
    (r"fever|chest pain|trouble breathing", alarm_signs),
    (r"reason|symptoms|concern|what happened|noticed|feeling in yourself", symptom_sentence),
    (r"which test", lambda p: "It was the blood work from the last check-up."),
    (r"as prescribed", lambda p: "Yes, exactly as prescribed."),
    (r"tried anything", lambda p: f"Only {p.voice.possessive} usual medicines, nothing else."),
    (r"happened before", lambda p: "It has happened before, but never like this."),
    (r"repeat the test", lambda p: "No, nobody said anything about that."),
    (r"missed or doubled", lambda p: "No, I don't think so."),
    (r"other medicines|what do you take|over-the-counter|how often", medicines_sentence),
    (r"prefer|in person, video or phone", preference_sentence),
    (r"allerg", allergies_sentence),
    (r"new symptoms|change to the medicines|changes? to your medicines", changes_sentence),
    (r"anyone with you|someone who can be with you|safe right now", lambda p: company_sentence(p)),
)


def story_symptoms(p: Patient) -> tuple[str, str]:
    """(duration, a sentence in the patient's voice) from the story's "Over the past ..."
    sentence, whether it says "<name> has had <symptoms>" or "<her> <symptoms> have ...";
    plain words from the seed when the story is phrased otherwise."""
    story = str(p.hints.get("story") or "")
    had = re.search(r"[Oo]ver the past ([\w -]+?),? \S+ has had (.+?)(?= despite|[,.;])", story)
    if had:
        duration = had.group(1)
        return duration, f"{p.voice.has_phrase} had {had.group(2)} for the past {duration}."
    own = re.search(
        r"[Oo]ver the past ([\w -]+?),? (?:her|his|their) (.+?)(?=[,.;]| and (?:she|he|they)\b)",
        story,
    )
    if own:
        duration = own.group(1)
        return duration, f"For the past {duration}, {p.voice.possessive} {own.group(2)}."
    condition = str(p.seed.get("condition") or "the condition").lower()
    return "a few days", (
        f"The symptoms of {p.voice.possessive} {condition} have been worse than usual for the "
        "past few days."
    )


def interaction_pair(profile: dict[str, Any]) -> str:
    names = medicine_names(profile, active_only=True)
    first = names[0] if names else "my medicine"
    return f"{first} and ibuprofen"


def new_phone(profile: dict[str, Any]) -> str:
    digits = re.sub(r"\D", "", str(profile.get("phone") or ""))
    if len(digits) != 10:
        return "5555550100"
    # Shift each of the last four digits so the new number always differs from the old one.
    return digits[:6] + "".join(str((int(digit) + 1) % 10) for digit in digits[6:])
