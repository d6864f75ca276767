"""Scripted simulated patient for the offline provider: deterministic rules, not a model.

It plays the patient prompt's task the way the prompt asks, reading the personality's trait
levels from the prompt itself (benchmark/data/personalities.yaml, as rendered), so editing a
level changes what the script does:

- It opens with the need named by the seed's task subcategory (in a caregiver's voice for
  pediatric or dependent patients) and lets the rest come out when asked: onset, severity and
  symptoms from the story, medicines, allergies, how it would like to be seen.
- A patient with a severe health concern has a red flag (chest tightness, breathlessness,
  fainting) that it mentions when asked, or brings up by itself on its second message.
- It picks among offered options (the visit type it prefers; the earliest when urgency is
  high, the latest when low), asks for something sooner once when urgency is high, and agrees
  when asked to confirm; with low cooperation it first asks why that is the right step.
- Once the need looks handled it asks follow-up questions chosen by its traits and by what
  was done (anxiety: is it serious; low literacy: what does it mean for me; a booking without
  a time: when and with whom; ...), as many as its patience allows. An answer that misses
  the question gets one re-ask (or, with low cooperation, a dissatisfied goodbye).
- It says goodbye (thanks, or dissatisfaction when left without an answer) and then sends the
  termination token. It always ends: impatient patients wrap up sooner, and nobody stays
  past turn 10.

Everything is a function of the request (prompt, messages, hints), so it is reproducible;
choices that are not set by a trait are drawn from a hash of the case, so they vary between
cases. offline/lapses is the same patient with deliberate lapses in one case in four (see
lapses.py), for the fidelity review to find.

Modules: patient (the patient as the request describes it), facts (what it says about itself)
and replies (how it answers each assistant message).
"""

from __future__ import annotations

from benchmark.engine.agents.offline_patient.facts import opening
from benchmark.engine.agents.offline_patient.lapses import with_lapse
from benchmark.engine.agents.offline_patient.patient import (
    LAST_ENGAGED_TURN,
    Patient,
    Temper,
    trait_levels,
    voice_for,
)
from benchmark.engine.agents.offline_patient.replies import GOODBYES, THANKS, reply
from llm.engine.chat import ChatRequest, ChatResponse, Usage

__all__ = ["BEHAVIOURS", "GOODBYES", "LAST_ENGAGED_TURN", "THANKS", "respond"]

# The scripted patient, and the same with deliberate lapses; model-string validation refuses
# any other offline name.
BEHAVIOURS = ("patient", "lapses")


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    hints = request.hints
    patient = Patient(
        hints=hints,
        voice=voice_for(hints.get("profile") or {}, bool(hints.get("caregiver"))),
        temper=Temper(**trait_levels(request)),
        own=[m.content for m in request.messages if m.role == "assistant"],
        heard=[m.content for m in request.messages[1:] if m.role == "user"],
    )
    text = reply(patient) if patient.own else opening(patient)
    if behaviour == "lapses":
        text = with_lapse(patient, text)
    prompt_chars = len(request.system) + sum(len(m.content) for m in request.messages)
    return ChatResponse(
        text=text,
        usage=Usage(input_tokens=prompt_chars // 4, output_tokens=len(text) // 4),
        model=request.model,
    )
