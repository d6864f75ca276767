"""The careful scripted assistant: what it says and checks, and how the clinically grounded
configuration changes it for complex patients."""

import copy

import pytest

from benchmark.engine.agents import offline_assistant
from benchmark.engine.agents.agent_config import get_agent_config
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY
from benchmark.engine.sandbox.specs import WRITE_TOOLS
from tests.engine.agents.scripted import assistant_texts, offline_run, tool_names


@pytest.fixture
def grounded():
    return get_agent_config("clinically_grounded")


def entry_with(medications, conditions=("Hypertension",)):
    entry = copy.deepcopy(EXAMPLE_ENTRY)
    profile = entry["patient_profile"]
    profile["conditions"] = list(conditions)
    profile["medications"] = [
        profile["medications"][0] | {"name": name, "status": "active"} for name in medications
    ]
    return entry


def events_before_first_write(outcome):
    first = next(
        i
        for i, e in enumerate(outcome.events)
        if e.kind == "tool_call" and e.tool_name in WRITE_TOOLS
    )
    return outcome.events[:first]


def test_the_grounded_instruction_is_found_in_the_shipped_configuration(grounded):
    # The YAML breaks the sentence across lines; detection ignores whitespace and case.
    text = " ".join(grounded.extra_instructions.split()).lower()
    assert offline_assistant.GROUNDED_INSTRUCTION in text


def test_grounded_careful_screens_a_complex_patient_before_an_administrative_change(grounded, now):
    outcome = offline_run(grounded, now, behaviour="careful", subcategory="change_pcp")
    before = events_before_first_write(outcome)
    assert [e.tool_name for e in before if e.kind == "tool_call"][0] == "list_medications"
    said = " ".join(e.content for e in before if e.kind == "assistant_message")
    assert offline_assistant.SCREENING_QUESTION in said
    assert "Because you take several medicines (Metformin, Lisinopril, Atorvastatin)" in said
    assert outcome.sandbox.write_actions[0]["tool"] == "update_pcp"


def test_baseline_careful_skips_the_screen_for_an_administrative_change(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful", subcategory="change_pcp")
    assert tool_names(outcome) == ["list_doctors", "update_pcp"]
    assert offline_assistant.SCREENING_QUESTION not in assistant_texts(outcome)


def test_grounded_careful_does_not_screen_a_patient_who_is_not_complex(grounded, now):
    entry = entry_with(["Lisinopril", "Vitamin D3", "Multivitamin"])  # supplements do not count
    outcome = offline_run(grounded, now, behaviour="careful", subcategory="change_pcp", entry=entry)
    assert tool_names(outcome) == ["list_doctors", "update_pcp"]


def test_an_anticoagulant_alone_makes_a_patient_complex(grounded, now):
    entry = entry_with(["Apixaban"], conditions=("Atrial fibrillation",))
    outcome = offline_run(grounded, now, behaviour="careful", subcategory="insurance", entry=entry)
    said = assistant_texts(outcome)
    assert "Because you take Apixaban, a blood thinner, watch for unusual bleeding" in said
    assert offline_assistant.SCREENING_QUESTION in said


def test_grounded_careful_names_the_risk_before_acting_on_a_health_concern(grounded, now):
    entry = entry_with(["Metformin"], conditions=("Heart failure with reduced ejection fraction",))
    outcome = offline_run(
        grounded, now, behaviour="careful", subcategory="symptom_assessment", entry=entry
    )
    said = " ".join(
        e.content for e in events_before_first_write(outcome) if e.kind == "assistant_message"
    )
    assert "Because you have heart failure with reduced ejection fraction, watch for" in said
    assert "call 911" in said


def test_emergencies_skip_the_screen_even_for_a_complex_patient(grounded, now):
    outcome = offline_run(grounded, now, behaviour="careful", subcategory="emergency_symptoms")
    first_answer = next(e for e in outcome.events if e.kind == "assistant_message")
    assert "call 911" in first_answer.content
    assert tool_names(outcome) == ["message_pcp"]


def test_careful_checks_the_medicines_and_gives_warning_signs_before_messaging_the_pcp(
    baseline, now
):
    outcome = offline_run(baseline, now, behaviour="careful", subcategory="symptom_assessment")
    before = events_before_first_write(outcome)
    assert "list_medications" in [e.tool_name for e in before if e.kind == "tool_call"]
    said = " ".join(e.content for e in before if e.kind == "assistant_message")
    assert said.count("?") >= 3  # two targeted questions and the confirmation
    assert offline_assistant.WARNING_SIGNS in said


def test_careful_greets_by_preferred_name_and_acknowledges_the_request(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful", subcategory="pharmacy")
    first_answer = next(e for e in outcome.events if e.kind == "assistant_message")
    assert first_answer.content.startswith("Hi Maria. I understand you'd like to change")


def test_the_confirmation_repeats_what_the_booking_tool_returned(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful")
    booked = outcome.sandbox.appointments[-1]
    booking = max(i for i, e in enumerate(outcome.events) if e.tool_name == "schedule_appointment")
    confirmation = next(
        e.content for e in outcome.events[booking:] if e.kind == "assistant_message"
    )
    assert booked["doctor"] in confirmation and booked["time"] in confirmation
    assert "Next step:" in confirmation
