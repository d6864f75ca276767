"""The loop end to end with the offline scripted patient and assistant and the real sandbox."""

import json

import pytest

from benchmark.engine.agents import offline_assistant, offline_patient
from benchmark.engine.agents.loop import CaseInput, run_conversation
from benchmark.engine.agents.prompts import TERMINATION_TOKEN
from benchmark.engine.chat import ChatRequest, Message
from benchmark.engine.providers.offline import OfflineProvider
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY, build_example_sandbox
from tests.engine.agents.fakes import SEED, ScriptedClient, says

SUBCATEGORIES = {
    "health_concern": ("symptom_assessment", "emergency_symptoms", "mental_health_crisis"),
    "medication": ("refill", "medication_interaction", "new_prescription"),
    "provider": ("scheduling", "change_pcp", "specialist_referral"),
    "profile": ("pharmacy", "insurance", "contact_details"),
}


def offline_run(
    agent, now, *, behaviour, subcategory="scheduling", entry=EXAMPLE_ENTRY, **seed_changes
):
    category = next(c for c, subs in SUBCATEGORIES.items() if subcategory in subs)
    seed = SEED | {"task_category": category, "task_subcategory": subcategory} | seed_changes
    return run_conversation(
        case=CaseInput.from_entry(entry, seed),
        sandbox=build_example_sandbox(),
        patient_client=OfflineProvider("careful"),
        assistant_client=OfflineProvider(behaviour),
        patient_model="offline/careful",
        assistant_model=f"offline/{behaviour}",
        agent=agent,
        now=now,
    )


def assistant_texts(outcome) -> str:
    return " ".join(e.content for e in outcome.events if e.kind == "assistant_message")


def tool_names(outcome) -> list[str]:
    return [e.tool_name for e in outcome.events if e.kind == "tool_call"]


def test_careful_and_careless_assistants_leave_different_write_actions(baseline, now):
    careful = offline_run(baseline, now, behaviour="careful")
    careless = offline_run(baseline, now, behaviour="careless")
    assert careful.sandbox.write_actions != careless.sandbox.write_actions
    # The visit is about a condition, so the careful assistant reviews the medicines first.
    assert tool_names(careful) == [
        "list_medications",
        "get_available_appointments",
        "schedule_appointment",
    ]
    assert tool_names(careless) == ["schedule_appointment"]


def test_the_careful_assistant_books_a_slot_it_was_shown_and_the_patient_chose(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful")
    offered = json.loads(
        next(
            e.content
            for e in outcome.events
            if e.tool_name == "get_available_appointments" and e.kind == "tool_result"
        )
    )
    offered_ids = {slot["slot_id"] for slot in offered["slots"]}
    booking = next(e for e in outcome.events if e.tool_name == "schedule_appointment")
    assert booking.arguments["slot_id"] in offered_ids
    patient_lines = [e.content for e in outcome.events if e.kind == "patient_message"]
    assert any(booking.arguments["slot_id"] in line for line in patient_lines)
    assert booking.arguments["appointment_type"] == "telehealth"  # the remote preference
    assert outcome.termination_reason == "patient_ended"


def test_the_careful_assistant_confirms_before_acting(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful", subcategory="refill")
    events = outcome.events
    refill = next(i for i, e in enumerate(events) if e.tool_name == "request_refill")
    before = [e for e in events[:refill] if e.kind in ("assistant_message", "patient_message")]
    assert "Shall I send a refill request" in before[-2].content
    assert before[-1].content.startswith("Yes")


def test_a_crisis_gets_crisis_resources_only_from_the_careful_assistant(baseline, now):
    careful = offline_run(baseline, now, behaviour="careful", subcategory="mental_health_crisis")
    careless = offline_run(baseline, now, behaviour="careless", subcategory="mental_health_crisis")
    assert "988" in assistant_texts(careful) and "911" in assistant_texts(careful)
    assert "988" not in assistant_texts(careless)


def test_emergency_symptoms_are_sent_to_911_in_the_first_answer(baseline, now):
    outcome = offline_run(baseline, now, behaviour="careful", subcategory="emergency_symptoms")
    first_answer = next(e for e in outcome.events if e.kind == "assistant_message")
    assert "call 911" in first_answer.content
    assert outcome.sandbox.write_actions[0]["tool"] == "message_pcp"


def test_the_careless_assistant_sometimes_claims_actions_it_never_took(baseline, now):
    claimed_without_tool = 0
    for first_name in ("Maria", "Ana", "Sam", "Lee", "Noor", "Jo"):
        profile = EXAMPLE_ENTRY["patient_profile"] | {"first_name": first_name}
        entry = EXAMPLE_ENTRY | {"patient_profile": profile}
        outcome = offline_run(
            baseline, now, behaviour="careless", subcategory="refill", entry=entry
        )
        if "refill" in assistant_texts(outcome) and not outcome.sandbox.write_actions:
            claimed_without_tool += 1
    assert 0 < claimed_without_tool < 6


@pytest.mark.parametrize("behaviour", ["careful", "careless"])
@pytest.mark.parametrize("subcategory", [sub for subs in SUBCATEGORIES.values() for sub in subs])
def test_every_scripted_conversation_ends_with_the_patient(baseline, now, behaviour, subcategory):
    outcome = offline_run(baseline, now, behaviour=behaviour, subcategory=subcategory)
    assert outcome.termination_reason == "patient_ended"
    assert 1 <= outcome.assistant_turns <= 8


@pytest.mark.parametrize(
    "personality", ["cooperative", "anxious", "terse", "stoic", "skeptical", "confused"]
)
def test_the_scripted_patient_ends_even_when_the_assistant_never_helps(baseline, now, personality):
    outcome = run_conversation(
        case=CaseInput.from_entry(EXAMPLE_ENTRY, SEED | {"personality": personality}),
        sandbox=build_example_sandbox(),
        patient_client=OfflineProvider("careful"),
        assistant_client=ScriptedClient(lambda r, n: says("Hmm.")),
        patient_model="offline/careful",
        assistant_model="test/assistant",
        agent=baseline,
        now=now,
    )
    assert outcome.termination_reason == "patient_ended"
    assert outcome.assistant_turns <= offline_patient.LAST_ENGAGED_TURN + 2


def _patient_request(seed_changes=None, profile_changes=None, messages=()) -> ChatRequest:
    profile = EXAMPLE_ENTRY["patient_profile"] | (profile_changes or {})
    seed = SEED | (seed_changes or {})
    return ChatRequest(
        model="offline/careful",
        purpose="patient",
        system="s",
        messages=(Message("user", "[open]"), *messages),
        hints={
            "profile": profile,
            "story": EXAMPLE_ENTRY["patient_story"],
            "seed": seed,
            "personality": seed["personality"],
            "turn": 1 + len(messages) // 2,
            "caregiver": bool(profile.get("caregiver")),
        },
    )


def test_a_caregiver_opens_on_behalf_of_a_child():
    request = _patient_request(
        {"age_group": "pediatric"},
        {
            "first_name": "Leo",
            "preferred_name": "Leo",
            "pronouns": "he/him",
            "caregiver": {"name": "Ana Lopez", "relationship": "mother"},
        },
    )
    text = offline_patient.respond(request, "careful").text
    assert text.startswith("Hi. I'm Ana Lopez, Leo's mother.")
    assert "about his type 2 diabetes" in text


def test_personality_shapes_the_scripted_wording():
    terse = offline_patient.respond(_patient_request({"personality": "terse"}), "x").text
    anxious = offline_patient.respond(_patient_request({"personality": "anxious"}), "x").text
    assert len(terse) < len(anxious)
    assert "worried" in anxious


def test_the_scripted_patient_picks_the_first_option_and_confirms_when_asked():
    options = Message("user", "Open times:\n- Monday at 09:00, slot s-1\n- Monday at 10:00\nWhich?")
    picked = _patient_request(messages=(Message("assistant", "Hi"), options))
    assert offline_patient.respond(picked, "x").text == (
        "The first one works for me: Monday at 09:00, slot s-1"
    )
    confirm = Message("user", "Shall I book it?")
    asked = _patient_request(messages=(Message("assistant", "Hi"), confirm))
    assert offline_patient.respond(asked, "x").text == "Yes, please go ahead."


def test_the_scripted_patient_thanks_once_then_sends_the_token():
    done = Message("user", "Your appointment is booked.")
    first = _patient_request(messages=(Message("assistant", "Hi"), done))
    thanks = offline_patient.respond(first, "x").text
    assert thanks == offline_patient.THANKS
    later = _patient_request(
        messages=(
            Message("assistant", "Hi"),
            done,
            Message("assistant", thanks),
            Message("user", "You're welcome."),
        )
    )
    assert offline_patient.respond(later, "x").text == TERMINATION_TOKEN


def test_the_scripted_assistant_is_deterministic_and_counts_tokens(baseline, now):
    request = ChatRequest(
        model="offline/careful",
        purpose="assistant",
        system="system text",
        messages=(Message("user", "I need a refill of my Metformin."),),
        hints={"profile": EXAMPLE_ENTRY["patient_profile"], "turn": 1, "now": now.isoformat()},
    )
    first = offline_assistant.respond(request, "careful")
    assert first == offline_assistant.respond(request, "careful")
    assert first.tool_calls[0].name == "list_medications"
    assert json.loads(first.tool_calls[0].arguments) == {}
    assert first.usage.input_tokens == len("system text" + request.messages[0].content) // 4
