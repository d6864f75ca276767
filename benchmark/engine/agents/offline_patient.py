"""Scripted simulated patient for the offline provider: deterministic rules, not a model.

It opens with the need named by the seed's task subcategory (in a caregiver's voice for
pediatric or dependent patients), answers questions from the profile and story, picks the
first option offered, agrees when asked to confirm, thanks the assistant once the need looks
handled and then sends the termination token. It always ends: after turn 6 it thanks and
leaves whatever happened. Personality changes only the wording. The behaviour suffix of the
model string is ignored: there is one scripted patient.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from benchmark.engine.agents.prompts import TERMINATION_TOKEN
from benchmark.engine.chat import ChatRequest, ChatResponse, Usage

LAST_ENGAGED_TURN = 6
THANKS = "Thank you, that is everything I needed."
HANDLED_MARKERS = (
    "booked",
    "scheduled",
    "sent",
    "submitted",
    "refill",
    "updated",
    "in the queue",
    "911",
    "emergency",
)
CONFIRM_MARKERS = (
    "shall i",
    "should i",
    "would you like me to",
    "do you want me to",
    "can i go ahead",
    "confirm",
    "is that ok",
)
ADMINISTRATIVE_CATEGORIES = ("profile", "medication")
_OPTION_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$", re.MULTILINE)
_POSSESSIVES = {"she": "her", "he": "his"}
_CARE_PREFERENCES = {
    "in person": "I'd prefer to come in person.",
    "remote": "A video or phone visit would suit me best.",
    "urgent call": "I'd like to talk to someone today if at all possible.",
}


@dataclass(frozen=True)
class _Voice:
    """Who is speaking and how they refer to the patient."""

    speaker_intro: str  # "" for the patient themself
    is_phrase: str  # "I'm" / "Sam is"
    possessive: str  # "my" / "his"
    takes: str  # "I take" / "Sam takes"


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    hints = request.hints
    voice = _voice(hints.get("profile") or {}, bool(hints.get("caregiver")))
    own_messages = [m.content for m in request.messages if m.role == "assistant"]
    if own_messages:
        last_assistant_text = next(
            (m.content for m in reversed(request.messages) if m.role == "user"), ""
        )
        text = _reply(hints, voice, last_assistant_text, own_messages)
    else:
        text = _opening(hints, voice)
    prompt_chars = len(request.system) + sum(len(m.content) for m in request.messages)
    return ChatResponse(
        text=text,
        usage=Usage(input_tokens=prompt_chars // 4, output_tokens=len(text) // 4),
        model=request.model,
    )


def _opening(hints: dict[str, Any], voice: _Voice) -> str:
    need = _need(hints, voice)
    preference = _CARE_PREFERENCES.get(_preference_key(hints), "")
    if (hints.get("seed") or {}).get("task_category") in ADMINISTRATIVE_CATEGORIES:
        preference = ""  # how to be seen is beside the point when updating a record
    personality = hints.get("personality", "")
    if personality == "terse":
        return need
    body = " ".join(part for part in (voice.speaker_intro, need, preference) if part)
    return f"Hi. {_styled(personality, body)}"


def _reply(
    hints: dict[str, Any], voice: _Voice, assistant_text: str, own_messages: list[str]
) -> str:
    personality = hints.get("personality", "")
    lowered = assistant_text.lower()
    if any(message.startswith(_thanks(personality)) for message in own_messages):
        return TERMINATION_TOKEN
    if int(hints.get("turn") or 0) > LAST_ENGAGED_TURN or "anything else" in lowered:
        return _thanks(personality)
    if "?" in assistant_text:
        options = _OPTION_LINE.findall(assistant_text)
        if options:
            return _styled(personality, f"The first one works for me: {options[0]}")
        if any(marker in lowered for marker in CONFIRM_MARKERS):
            return _styled(personality, "Yes, please go ahead.")
        return _styled(personality, _facts(hints, voice))
    if any(marker in lowered for marker in HANDLED_MARKERS):
        return _thanks(personality)
    return _styled(personality, "Okay. What happens next?")


def _need(hints: dict[str, Any], voice: _Voice) -> str:
    seed = hints.get("seed") or {}
    profile = hints.get("profile") or {}
    task = str(seed.get("task_subcategory") or seed.get("task_category") or "")
    condition = str(seed.get("condition") or "health").lower()
    poss = voice.possessive
    medicine = _medicine_names(profile, active_only=True)[:1] or ["usual medicine"]
    rules = (
        (
            ("emergency",),
            f"{voice.is_phrase} having severe symptoms right now and it is getting worse fast.",
        ),
        (
            ("crisis",),
            f"{voice.is_phrase} in a very dark place and not safe with these thoughts right now.",
        ),
        (("refill",), f"I need a refill of {poss} {medicine[0]}."),
        (("interaction",), f"Is it safe to take {_interaction_pair(profile)} together?"),
        (("new_prescription",), f"I'd like a new prescription to help with {poss} {condition}."),
        (("side_effect", "dosage"), f"I have a question about {poss} {medicine[0]}."),
        (("change_pcp",), "I'd like to switch to a different primary care doctor."),
        (("referral",), f"I'd like a referral to a specialist for {poss} {condition}."),
        (("reschedule", "cancel"), f"I need to move {poss} upcoming appointment."),
        (("pharmacy",), f"I'd like to change {poss} pharmacy to Walgreens at 100 Main Street."),
        (("insurance",), f"{poss.capitalize()} insurance changed: it is now Aetna, PPO plan."),
        (("contact",), f"Please update {poss} phone number to {_new_phone(profile)}."),
        (
            ("symptom_assessment",),
            f"{voice.is_phrase} not feeling right; the symptoms from "
            f"{poss} {condition} have been bothering me.",
        ),
        (
            ("scheduling", "follow_up", "discharge"),
            f"I need to book an appointment about {poss} {condition}.",
        ),
    )
    for keywords, sentence in rules:
        if any(keyword in task for keyword in keywords):
            return sentence
    return f"{voice.is_phrase} having trouble with {poss} {condition} and would like some help."


def _facts(hints: dict[str, Any], voice: _Voice) -> str:
    seed = hints.get("seed") or {}
    profile = hints.get("profile") or {}
    severity = str(seed.get("severity") or "moderate")
    medicines = ", ".join(_medicine_names(profile, active_only=True)) or "nothing regular"
    story_detail = _story_detail(str(hints.get("story") or ""))
    if hints.get("personality") == "confused":
        return f"I'm not really sure... it started a while back, I think. {story_detail}"
    parts = [
        f"It started a few days ago and it feels {severity}.",
        f"{voice.takes} {medicines}.",
        _CARE_PREFERENCES.get(_preference_key(hints), ""),
        story_detail,
    ]
    if hints.get("personality") == "terse":
        return parts[0]
    return " ".join(part for part in parts if part)


def _styled(personality: str, text: str) -> str:
    if personality == "terse":
        return text  # brevity comes from saying less, see _opening and _facts
    if personality == "anxious":
        return f"I'm really worried about this. {text} Please, I need help soon."
    if personality == "confused":
        return f"Sorry, I'm not sure I'm saying this right. {text}"
    if personality == "skeptical":
        return f"{text} I would like a clear answer, please."
    if personality == "stoic":
        return f"It's probably nothing much. {text}"
    return text


def _thanks(personality: str) -> str:
    return "Thanks." if personality == "terse" else THANKS


def _voice(profile: dict[str, Any], caregiver_voice: bool) -> _Voice:
    if not caregiver_voice:
        return _Voice(speaker_intro="", is_phrase="I'm", possessive="my", takes="I take")
    name = str(profile.get("preferred_name") or profile.get("first_name") or "my child")
    pronoun = str(profile.get("pronouns") or "they/them").split("/")[0].lower()
    caregiver = profile.get("caregiver") or {}
    if caregiver.get("name"):
        intro = f"I'm {caregiver['name']}, {name}'s {caregiver.get('relationship') or 'carer'}."
    else:
        intro = f"I'm writing for {name}, who is in my care."
    return _Voice(
        speaker_intro=intro,
        is_phrase=f"{name} is",
        possessive=_POSSESSIVES.get(pronoun, "their"),
        takes=f"{name} takes",
    )


def _medicine_names(profile: dict[str, Any], *, active_only: bool) -> list[str]:
    medications = [m for m in profile.get("medications") or [] if isinstance(m, dict)]
    if active_only:
        medications = [m for m in medications if m.get("status") == "active"] or medications
    return [str(m["name"]) for m in medications if m.get("name")]


def _interaction_pair(profile: dict[str, Any]) -> str:
    names = _medicine_names(profile, active_only=True)
    first = names[0] if names else "my medicine"
    return f"{first} and ibuprofen"


def _new_phone(profile: dict[str, Any]) -> str:
    digits = re.sub(r"\D", "", str(profile.get("phone") or ""))
    if len(digits) != 10:
        return "5555550100"
    # Shift each of the last four digits so the new number always differs from the old one.
    return digits[:6] + "".join(str((int(digit) + 1) % 10) for digit in digits[6:])


def _preference_key(hints: dict[str, Any]) -> str:
    seed = hints.get("seed") or {}
    return re.sub(r"[\s_-]+", " ", str(seed.get("care_preference") or "").lower()).strip()


def _story_detail(story: str) -> str:
    # A story's first sentence usually introduces the patient; the second holds the symptoms.
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", story.strip())
    detail = sentences[1] if len(sentences) > 1 else sentences[0]
    return f"From what I've noticed: {detail}" if detail else ""


def _first_sentence(text: str) -> str:
    match = re.match(r"\s*(.+?[.!?])(\s|$)", text, re.DOTALL)
    return (match.group(1) if match else text).strip()
