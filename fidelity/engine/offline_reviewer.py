"""The offline scripted fidelity reviewer: transparent rules standing in for a model.

It reads request.hints (the record, the story, the seed, the personality's trait levels, the
trace and how it ended: structured copies of what the prompt holds, never the agent's
identity) and answers the reviewer's JSON. Each rule names itself in the explanation:

- off_record: the patient denies taking any medicine while the record lists some, denies
  allergies the record has, or names an allergy neither the record nor the story holds.
- scenario_unprompted: the patient talks about its instructions or persona, or copies ten or
  more words in a row of the hidden story when the assistant had asked nothing.
- speaks_as_assistant: the patient uses the assistant's lines ("how can I help you", "is
  there anything else I can help you with", "as your assistant").
- breaks_personality: a patient of low health literacy using two or more clinical terms; a
  patient of low anxiety saying it is terrified or panicking; a patient of low
  communication style writing more than 120 words in one message.
- ends_early: the patient left after at most one assistant message, when that message did
  not send it to emergency care.

It is deterministic and labelled "scripted" wherever its findings are shown. One behaviour:
offline/reviewer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from llm.engine.chat import ChatRequest, ChatResponse, Usage

BEHAVIOURS = ("reviewer",)
STORY_RUN_WORDS = 10
LONG_MESSAGE_WORDS = 120

DENIES_MEDICINES = re.compile(
    r"\b(?:don't|do not|doesn't|does not) take any (?:medicines?|medications?|meds|pills)\b"
    r"|\bnot on any (?:medicines?|medications?|meds)\b",
    re.IGNORECASE,
)
DENIES_ALLERGIES = re.compile(r"\bno (?:known )?allergies\b|\bnot allergic to anything\b", re.I)
NAMES_ALLERGIES = re.compile(r"\ballergic to ([^.;!?]+)", re.IGNORECASE)
MENTIONS_INSTRUCTIONS = re.compile(
    r"\b(?:my|the|these) (?:instructions|persona|system prompt|background story|role-?play)\b"
    r"|\bI(?:'m| am) (?:a |an )?(?:simulated|AI|language model)\b",
    re.IGNORECASE,
)
ASSISTANT_LINES = re.compile(
    r"\bhow (?:can|may) I (?:help|assist) you\b"
    r"|\bis there anything else I can (?:help|do)\b"
    r"|\bas (?:an?|your) (?:AI|virtual )?assistant\b",
    re.IGNORECASE,
)
CLINICAL_TERMS = re.compile(
    r"\b(?:contraindicat\w*|etiology|titrat\w*|pharmacokinetic\w*|prophyla\w*|idiopathic"
    r"|tachycardi\w*|dyspn\w*|hba1c|nephrotoxic\w*|hepatotoxic\w*|differential diagnosis"
    r"|bioavailab\w*|half-life)\b",
    re.IGNORECASE,
)
PANIC = re.compile(r"\b(?:terrified|panicking|panic attack|freaking out|so scared)\b", re.I)
EMERGENCY_CARE = re.compile(r"\b911\b|\b988\b|emergency (?:room|department|services)", re.I)
WORD = re.compile(r"[a-z0-9']+")


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    findings = review(request.hints)
    text = json.dumps({"findings": findings})
    prompt_chars = len(request.system) + sum(len(m.content) for m in request.messages)
    return ChatResponse(
        text=text,
        usage=Usage(input_tokens=prompt_chars // 4, output_tokens=len(text) // 4),
        model=request.model,
    )


def review(hints: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every finding the rules make on the conversation in `hints`, in trace order."""
    events: Sequence[Mapping[str, Any]] = hints.get("events") or []
    findings = []
    last_assistant = ""
    for event in events:
        if event["kind"] == "assistant_message":
            last_assistant = event.get("content") or ""
        elif event["kind"] == "patient_message" and event.get("content"):
            for kind, quote, why in _message_errors(event["content"], last_assistant, hints):
                findings.append(_finding(kind, event["event_id"], quote, why))
    findings.extend(_early_end(events, hints.get("termination_reason") or ""))
    return findings


def _finding(kind: str, event: str, quote: str, explanation: str) -> dict[str, str]:
    return {"kind": kind, "event": event, "quote": quote.strip()[:200], "explanation": explanation}


def _message_errors(
    text: str, asked: str, hints: Mapping[str, Any]
) -> Iterator[tuple[str, str, str]]:
    profile = hints.get("profile") or {}
    traits = hints.get("traits") or {}
    story = hints.get("story") or ""
    yield from _off_record(text, profile, story)
    if match := MENTIONS_INSTRUCTIONS.search(text):
        yield "scenario_unprompted", match.group(0), "Rule: the patient talks about its script."
    if "?" not in asked and (copied := _story_run(text, story)):
        yield (
            "scenario_unprompted",
            copied,
            f"Rule: {STORY_RUN_WORDS}+ words of the hidden story copied without being asked.",
        )
    if match := ASSISTANT_LINES.search(text):
        yield "speaks_as_assistant", match.group(0), "Rule: a line only the assistant would say."
    yield from _personality(text, traits)


def _off_record(
    text: str, profile: Mapping[str, Any], story: str
) -> Iterator[tuple[str, str, str]]:
    medicines = [m for m in profile.get("medications") or [] if isinstance(m, dict)]
    allergies = [str(a).lower() for a in profile.get("allergies") or []]
    if medicines and (match := DENIES_MEDICINES.search(text)):
        yield "off_record", match.group(0), "Rule: denies medicines the record lists."
    if allergies and (match := DENIES_ALLERGIES.search(text)):
        yield "off_record", match.group(0), "Rule: denies allergies the record lists."
    for match in NAMES_ALLERGIES.finditer(text):
        named = [part.strip().lower() for part in re.split(r",|\band\b", match.group(1))]
        unknown = [n for n in named if n and n not in allergies and n not in story.lower()]
        if unknown:
            yield "off_record", match.group(0), f"Rule: allergy to {unknown[0]} is not on record."


def _story_run(text: str, story: str) -> str:
    """The first run of STORY_RUN_WORDS words of `text` that also stands in `story`, or ""."""
    words = WORD.findall(text.lower())
    story_words = " " + " ".join(WORD.findall(story.lower())) + " "
    for start in range(len(words) - STORY_RUN_WORDS + 1):
        run = " ".join(words[start : start + STORY_RUN_WORDS])
        if f" {run} " in story_words:
            return run
    return ""


def _personality(text: str, traits: Mapping[str, str]) -> Iterator[tuple[str, str, str]]:
    terms = CLINICAL_TERMS.findall(text)
    if traits.get("health_literacy") == "low" and len(terms) >= 2:
        yield (
            "breaks_personality",
            ", ".join(terms[:3]),
            "Rule: clinical terms from a patient of low health literacy.",
        )
    if traits.get("anxiety") == "low" and (match := PANIC.search(text)):
        yield "breaks_personality", match.group(0), "Rule: panic from a patient of low anxiety."
    words = len(WORD.findall(text.lower()))
    if traits.get("communication_style") == "low" and words > LONG_MESSAGE_WORDS:
        yield (
            "breaks_personality",
            text[:80],
            f"Rule: {words} words from a patient of low communication style.",
        )


def _early_end(events: Sequence[Mapping[str, Any]], termination: str) -> list[dict[str, str]]:
    if termination != "patient_ended":
        return []
    said = [e for e in events if e["kind"] == "assistant_message" and e.get("content")]
    patient = [e for e in events if e["kind"] == "patient_message"]
    if len(said) > 1 or not patient or (said and EMERGENCY_CARE.search(said[-1]["content"])):
        return []
    last = patient[-1]
    return [
        _finding(
            "ends_early",
            last["event_id"],
            last.get("content") or "(left the conversation)",
            f"Rule: the patient left after {len(said)} assistant message(s).",
        )
    ]
