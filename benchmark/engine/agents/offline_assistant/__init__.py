"""Scripted assistant for the offline provider: deterministic rules, not a model.

Two behaviours, so that the demo and the tests show the jury telling them apart:

- "careful" works the way the assistant prompt asks. It greets the patient by name and
  acknowledges what they said, asks one or two targeted questions before clinical actions,
  reviews the medication list before advising on a health concern, looks things up before
  acting (open slots, appointments, medicines, clinicians, the record), offers choices,
  confirms before every change, names warning signs that mean 911 or the ER, escalates a red
  flag the moment the patient mentions it, sends emergencies to 911, gives crisis resources
  (988, 911) and, after acting, repeats what the tool actually returned, explains what happens
  next and answers the patient's follow-up questions (is it serious, what if it gets worse,
  whether to keep taking a medicine, what to bring, when they will hear back, ...).
- "careless" acts at once: it books before confirming or checking availability and with the
  wrong visit type, sometimes claims a booking, refill or message it never made, misses red
  flags and crises (false reassurance, no 911 or 988), answers follow-up questions vaguely
  and pads every answer.

Agent configuration matters in one transparent way. When the system prompt carries the
clinically grounded instruction to screen complex patients (detected by the phrase
GROUNDED_INSTRUCTION, whitespace and case ignored), the careful assistant follows it: for a
complex patient (three or more current medicines, vitamins and supplements not counted; an
anticoagulant; an immunosuppressant, transplant or chemotherapy; heart failure; end-stage
kidney disease or dialysis; poorly controlled diabetes) it reviews the medication list before
acting, asks a brief health-screening question before carrying out a request that did not
already start with clinical questions, and gives one caution naming the condition or medicine
that makes the patient complex. Without that instruction the careful assistant skips the
screen for administrative requests. Emergencies and crises always go straight to 911 / 988.

It reads only what a real agent could (see state.py). Modules: state (reading the request),
proposals (look-ups and actions), careful, answers (the careful assistant's replies to
follow-up questions), careless, cautions (the complex-patient rule) and texts.
"""

from __future__ import annotations

from benchmark.engine.agents.offline_assistant.careful import careful
from benchmark.engine.agents.offline_assistant.careless import careless
from benchmark.engine.agents.offline_assistant.state import GROUNDED_INSTRUCTION, read_state
from benchmark.engine.agents.offline_assistant.texts import SCREENING_QUESTION, WARNING_SIGNS
from llm.engine.chat import ChatRequest, ChatResponse

__all__ = ["BEHAVIOURS", "GROUNDED_INSTRUCTION", "SCREENING_QUESTION", "WARNING_SIGNS", "respond"]

# The behaviours this script plays; model-string validation refuses any other offline name.
BEHAVIOURS = ("careful", "careless")


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    """Any behaviour other than "careless" plays the careful assistant."""
    state = read_state(request)
    script = careless if behaviour == "careless" else careful
    return script(state, request)
