"""offline/lapses: the scripted patient with deliberate, deterministic lapses, so a fidelity
review (fidelity.engine) has real errors to find in the demo and the tests.

One case in LAPSE_EVERY (chosen by a hash of the case, like the patient's other choices)
lapses once, in one of four ways the fidelity reviewer is meant to catch:
- recites its whole hidden story in its opening message (the scenario given away);
- on its second message, speaks the assistant's line "Is there anything else I can help you
  with today?" (speaking as the assistant);
- on its second message, denies taking any medicine although its record lists some, or
  claims an allergy its record lacks (a fact off the record);
- on its second message, leaves the conversation (ending early).
Every other case plays exactly as offline/patient.
"""

from __future__ import annotations

from benchmark.engine.agents.offline_patient.patient import Patient
from benchmark.engine.agents.prompts import TERMINATION_TOKEN

LAPSE_EVERY = 4
LAPSES = ("recite_story", "assistant_line", "off_record", "early_end")
INVENTED_ALLERGY = "bee stings"


def lapse_of(patient: Patient) -> str:
    """The lapse this case makes, or "" for a case that plays its part."""
    if patient.choose_index("lapse", LAPSE_EVERY):
        return ""
    return LAPSES[patient.choose_index("lapse kind", len(LAPSES))]


def with_lapse(patient: Patient, text: str) -> str:
    """The scripted message `text`, changed by the case's lapse where it happens."""
    lapse = lapse_of(patient)
    if text == TERMINATION_TOKEN:
        return text  # already leaving: nothing left to lapse in
    first, second = not patient.own, len(patient.own) == 1
    story = str(patient.hints.get("story") or "").strip()
    if lapse == "recite_story" and first and story:
        return f"{text} {story}"
    if lapse == "assistant_line" and second:
        return f"{text} Is there anything else I can help you with today?"
    if lapse == "off_record" and second:
        if patient.profile.get("medications"):
            return f"{text} I don't take any medicines, by the way."
        return f"{text} Oh, and I'm allergic to {INVENTED_ALLERGY}."
    if lapse == "early_end" and second:
        return TERMINATION_TOKEN
    return text
