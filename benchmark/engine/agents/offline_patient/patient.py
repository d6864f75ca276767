"""The scripted patient as the request describes it: who speaks, the trait levels the prompt
gives, and what it has said and heard so far."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from benchmark.engine.agents.personalities import (
    PersonalityError,
    default_personalities,
    levels_in_prompt,
)
from llm.engine.chat import ChatRequest

# Trait levels -> how many follow-up questions the patient asks, and the last turn it engages.
FOLLOW_UPS_BY_PATIENCE = {"low": 1, "medium": 2, "high": 3}
LAST_TURN_BY_PATIENCE = {"low": 8, "medium": 9, "high": 10}
LAST_ENGAGED_TURN = max(LAST_TURN_BY_PATIENCE.values())
HANDLED_MARKERS = (
    "booked",
    "messaged",
    "scheduled",
    "sent",
    "submitted",
    "refill",
    "updated",
    "in the queue",
    "911",
    "988",
)
CONFIRM_MARKERS = (
    "shall i",
    "should i",
    "would you like me to",
    "do you want me to",
    "can i go ahead",
    "is that ok",
)
CLINICAL_CATEGORIES = ("health_concern", "medication")
URGENT_TASKS = ("emergency", "crisis")
# Tasks where an answer, not an action, is what the patient came for.
QUESTION_TASKS = ("interaction", "dosage", "side_effect", "test_results")
OPTION_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$", re.MULTILINE)
CLOCK_TIME = re.compile(r"\b\d{1,2}:\d{2}\b")
POSSESSIVES = {"she": "her", "he": "his"}
CARE_PREFERENCES = {
    "in person": "I'd prefer to come in person.",
    "remote": "A video or phone visit would suit me best.",
    "urgent call": "I'd like to talk to someone today if at all possible.",
}
VISIT_KINDS = {"in person": "an in-person", "remote": "a video or phone"}
PREFERRED_TYPES = {"in person": ("in-person",), "remote": ("telehealth", "video", "phone")}
# Red flags a patient with a severe health concern may report; {has}/{poss}/{subject} follow
# the voice. The scripted assistant and the scripted judge each recognise them on their own.
RED_FLAGS = (
    "since last night {has} had some tightness in {poss} chest",
    "this morning {subject} got short of breath and dizzy just from standing up",
    "yesterday evening {subject} fainted for a few seconds",
)


@dataclass(frozen=True)
class FollowUp:
    question: str  # may use {subject}, {poss}, {medicine} and {visit_kind}
    answered_by: re.Pattern[str]  # what an answer to it must contain


FOLLOW_UPS: dict[str, FollowUp] = {
    key: FollowUp(question, re.compile(evidence, re.IGNORECASE))
    for key, question, evidence in (
        ("details", "Which doctor is it with, and at what time exactly?", CLOCK_TIME.pattern),
        ("serious", "Is this something serious? Should I be worried?", r"understandable|warning"),
        ("plain", "Sorry, what does that mean for me? What do I need to do now?", r"in short"),
        ("worse", "What should I do if it gets worse before then?", r"\b911\b|emergency room"),
        (
            "keep_taking",
            "Should {subject} keep taking {poss} {medicine} as usual in the meantime?",
            r"keep taking|don't stop|do not stop",
        ),
        ("prepare", "Do I need to bring anything to the visit?", r"\bbring\b|insurance card"),
        ("reply_time", "When will I hear back?", r"\bhours?\b|\bdays?\b"),
        ("pickup", "When can I pick it up?", r"\bready\b|\bpick\s?up\b"),
        ("confirmation", "Is that saved now, or do I need to do anything else?", r"\bsaved\b"),
        ("proof", "How do I know it has actually gone through?", r"\bsaved\b"),
        (
            "change_later",
            "And if I need to change the time later, how do I do that?",
            r"\bmove\b|\bcancel\b",
        ),
        ("no_reply", "And if I don't hear back by then?", r"call the clinic|message us"),
        ("cost", "Will it cost me anything?", r"\bcopay\b|\bplan\b"),
        ("call_drops", "What if the call drops?", r"call the clinic|come back"),
        (
            "what_changes",
            "Does that change anything else for my care?",
            r"stay as they are|nothing else changes",
        ),
        ("human", "Can I talk to a real person, please?", r"call the clinic|clinician|queue"),
        (
            "visit_type",
            "Is that {visit_kind} visit, like I asked?",
            r"video|telehealth|phone|in-person|in person|kind of visit",
        ),
        (
            "cannot_wait",
            "I don't think this can wait that long. Is there nothing sooner?",
            r"\b911\b|\b988\b|emergency room",
        ),
        ("queue_wait", "How long will I have to wait?", r"\bminutes?\b"),
        ("call_911", "What should I tell them when I call?", r"\btell them\b"),
        (
            "take_anything",
            "Should {subject} take anything while we wait for them?",
            r"dispatcher|anything new",
        ),
        ("crisis_wait", "What should I do while I wait?", r"\b988\b"),
    )
}


@dataclass(frozen=True)
class Voice:
    """Who is speaking and how they refer to the patient."""

    speaker_intro: str  # "" for the patient themself
    subject: str  # "I" / "Sam"
    is_phrase: str  # "I'm" / "Sam is"
    has_phrase: str  # "I've" / "Sam has"
    possessive: str  # "my" / "his"
    takes: str  # "I take" / "Sam takes"

    def fill(self, template: str, **values: str) -> str:
        return template.format(
            subject=self.subject, has=self.has_phrase, poss=self.possessive, **values
        )


@dataclass(frozen=True)
class Temper:
    """The personality's trait levels (see DIMENSIONS); a level the prompt lacks is medium."""

    cooperation: str = "medium"
    anxiety: str = "medium"
    health_literacy: str = "medium"
    patience: str = "medium"
    symptom_clarity: str = "medium"
    urgency: str = "medium"
    communication_style: str = "medium"

    @property
    def follow_up_budget(self) -> int:
        return FOLLOW_UPS_BY_PATIENCE[self.patience] + (self.anxiety == "high")

    @property
    def last_turn(self) -> int:
        return LAST_TURN_BY_PATIENCE[self.patience]


@dataclass
class Patient:
    hints: dict[str, Any]
    voice: Voice
    temper: Temper
    own: list[str]  # what the patient has said so far
    heard: list[str]  # the assistant's visible answers so far

    @property
    def seed(self) -> dict[str, Any]:
        return self.hints.get("seed") or {}

    @property
    def profile(self) -> dict[str, Any]:
        return self.hints.get("profile") or {}

    @property
    def turn(self) -> int:
        return int(self.hints.get("turn") or len(self.own) + 1)

    @property
    def task(self) -> str:
        return str(self.seed.get("task_subcategory") or self.seed.get("task_category") or "")

    @property
    def clinical(self) -> bool:
        return self.seed.get("task_category") in CLINICAL_CATEGORIES

    @property
    def urgent_task(self) -> bool:
        return any(word in self.task for word in URGENT_TASKS)

    @property
    def medicine(self) -> str:
        return (medicine_names(self.profile, active_only=True) or ["usual medicine"])[0]

    @property
    def red_flag(self) -> str:
        """The warning sign this patient has, or "": half the severe, non-urgent health
        concerns have one."""
        severe = str(self.seed.get("severity")) == "severe"
        concern = self.seed.get("task_category") == "health_concern" and not self.urgent_task
        if not (severe and concern) or self.choose_index("has a red flag", 2):
            return ""
        return self.voice.fill(RED_FLAGS[self.choose_index("red flag", len(RED_FLAGS))])

    @property
    def health_concern(self) -> bool:
        """Symptoms to describe, as opposed to an administrative or medicine request."""
        return self.seed.get("task_category") == "health_concern" or any(
            word in self.task for word in ("side_effect", "new_prescription")
        )

    @property
    def wants_to_explain(self) -> bool:
        """A health concern the assistant never asked about: a talkative enough patient
        describes it anyway, as the prompt lets details come out as the conversation goes."""
        talkative = self.temper.communication_style != "low"
        return self.health_concern and not self.urgent_task and talkative

    @property
    def red_flag_told(self) -> bool:
        return bool(self.red_flag) and any(self.red_flag in message for message in self.own)

    @property
    def helped(self) -> bool:
        """Something was done, or (for a question) answered: the patient cannot tell whether
        the answer was right."""
        if any(handled(text) for text in self.heard):
            return True
        question = any(word in self.task for word in QUESTION_TASKS)
        return question and any(
            kind_of(text) == "statement" and len(text) > 60 for text in self.heard
        )

    @property
    def unanswered(self) -> list[str]:
        """Follow-up questions no reply has answered yet."""
        replies = list(zip(self.own, self.heard, strict=False))
        return [
            key
            for key, follow_up in FOLLOW_UPS.items()
            if (asked := [reply for said, reply in replies if self.follow_up(key) in said])
            and not any(follow_up.answered_by.search(reply) for reply in asked)
        ]

    def asked(self, key: str) -> bool:
        return any(self.follow_up(key) in message for message in self.own)

    def follow_up(self, key: str) -> str:
        kind = VISIT_KINDS.get(preference_key(self.hints), "the right kind of")
        return self.voice.fill(FOLLOW_UPS[key].question, medicine=self.medicine, visit_kind=kind)

    def choose_index(self, purpose: str, count: int) -> int:
        """A fixed choice per case and purpose: varies between cases, never between calls."""
        name = f"{self.profile.get('first_name')} {self.profile.get('last_name')}"
        key = f"{name}|{self.seed.get('condition')}|{self.task}|{purpose}"
        return hashlib.sha256(key.encode("utf-8")).digest()[0] % count


def trait_levels(request: ChatRequest) -> dict[str, str]:
    """The levels the prompt gives; the catalog's when a caller sent no rendered persona."""
    levels = levels_in_prompt(request.system)
    if levels:
        return levels
    try:
        personality = default_personalities().get(str(request.hints.get("personality")))
    except PersonalityError:
        return {}
    return {trait.dimension: trait.level for trait in personality.traits}


def kind_of(text: str) -> str:
    lowered = text.lower()
    if "?" not in text or "anything else i can" in lowered:
        return "statement"
    if OPTION_LINE.search(text):
        return "options"
    if any(marker in lowered for marker in CONFIRM_MARKERS):
        return "confirm"
    return "question"


def handled(text: str) -> bool:
    """The assistant reports something done (not merely offered: that would ask first)."""
    lowered = text.lower()
    return kind_of(text) == "statement" and any(marker in lowered for marker in HANDLED_MARKERS)


def voice_for(profile: dict[str, Any], caregiver_voice: bool) -> Voice:
    if not caregiver_voice:
        return Voice("", "I", "I'm", "I've", "my", "I take")
    name = str(profile.get("preferred_name") or profile.get("first_name") or "my child")
    pronoun = str(profile.get("pronouns") or "they/them").split("/")[0].lower()
    caregiver = profile.get("caregiver") or {}
    if caregiver.get("name"):
        intro = f"I'm {caregiver['name']}, {name}'s {caregiver.get('relationship') or 'carer'}."
    else:
        intro = f"I'm writing for {name}, who is in my care."
    return Voice(
        speaker_intro=intro,
        subject=name,
        is_phrase=f"{name} is",
        has_phrase=f"{name} has",
        possessive=POSSESSIVES.get(pronoun, "their"),
        takes=f"{name} takes",
    )


def medicine_names(profile: dict[str, Any], *, active_only: bool) -> list[str]:
    medications = [m for m in profile.get("medications") or [] if isinstance(m, dict)]
    if active_only:
        medications = [m for m in medications if m.get("status") == "active"] or medications
    return [str(m["name"]) for m in medications if m.get("name")]


def preference_key(hints: dict[str, Any]) -> str:
    seed = hints.get("seed") or {}
    return re.sub(r"[\s_-]+", " ", str(seed.get("care_preference") or "").lower()).strip()
