"""Scripted conversations for the tests: the offline patient and assistant in the example
sandbox, for any task and personality."""

from benchmark.engine.agents.loop import CaseInput, run_conversation
from benchmark.engine.sandbox.examples import EXAMPLE_ENTRY, build_example_sandbox
from llm.engine.providers.offline import OfflineProvider
from tests.engine.agents.fakes import SEED

SUBCATEGORIES = {
    "health_concern": (
        "symptom_assessment",
        "emergency_symptoms",
        "mental_health_crisis",
        "chronic_condition_follow_up",
        "test_results_question",
    ),
    "medication": (
        "refill",
        "medication_interaction",
        "new_prescription",
        "side_effects",
        "dosage_question",
    ),
    "provider": ("scheduling", "change_pcp", "specialist_referral", "reschedule_or_cancel"),
    "profile": ("pharmacy", "insurance", "contact_details"),
}
ALL_SUBCATEGORIES = [sub for subs in SUBCATEGORIES.values() for sub in subs]
PERSONALITIES = ("cooperative", "anxious", "terse", "stoic", "skeptical", "confused")


def offline_run(
    agent, now, *, behaviour, subcategory="scheduling", entry=EXAMPLE_ENTRY, **seed_changes
):
    category = next(c for c, subs in SUBCATEGORIES.items() if subcategory in subs)
    seed = SEED | {"task_category": category, "task_subcategory": subcategory} | seed_changes
    return run_conversation(
        case=CaseInput.from_entry(entry, seed),
        sandbox=build_example_sandbox(),
        patient_client=OfflineProvider("patient"),
        assistant_client=OfflineProvider(behaviour),
        patient_model="offline/patient",
        assistant_model=f"offline/{behaviour}",
        agent=agent,
        now=now,
    )


def assistant_texts(outcome) -> str:
    return " ".join(e.content for e in outcome.events if e.kind == "assistant_message")


def patient_lines(outcome) -> list[str]:
    return [e.content for e in outcome.events if e.kind == "patient_message"]


def tool_names(outcome) -> list[str]:
    return [e.tool_name for e in outcome.events if e.kind == "tool_call"]
