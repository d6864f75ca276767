import json
from datetime import date

import pytest

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.examples import (
    EXAMPLE_ENTRY,
    EXAMPLE_NOW,
    EXAMPLE_PROFILE,
    EXAMPLE_ROSTER,
    build_example_sandbox,
)
from benchmark.engine.sandbox.slots import SLOTS_PER_DAY
from llm.engine.structured import InvalidOutput


def test_same_seed_builds_identical_state():
    assert build_example_sandbox(7).to_json() == build_example_sandbox(7).to_json()


def test_different_seeds_build_different_slots():
    assert build_example_sandbox(7).slots != build_example_sandbox(8).slots


def test_it_round_trips_through_json_exactly(sandbox):
    sandbox.call(
        "schedule_appointment",
        {"appointment_type": "phone", "preferred_date": "2026-11-10", "reason": "check-up"},
    )
    sandbox.call("request_refill", {"medication_name": "metformin"})
    data = json.loads(json.dumps(sandbox.to_json()))
    restored = Sandbox.from_json(data)
    assert restored.to_json() == sandbox.to_json()
    assert restored.state_hash() == sandbox.state_hash()


def test_restored_sandbox_keeps_working_like_the_original(sandbox):
    restored = Sandbox.from_json(sandbox.to_json())
    arguments = {"appointment_type": "in-person", "preferred_date": "2026-11-12", "reason": "bp"}
    assert restored.call("schedule_appointment", arguments) == sandbox.call(
        "schedule_appointment", arguments
    )
    assert restored.state_hash() == sandbox.state_hash()


def test_state_hash_changes_when_state_changes(sandbox):
    before = sandbox.state_hash()
    sandbox.call("update_insurance", {"provider": "Aetna", "plan_type": "HMO"})
    assert sandbox.state_hash() != before


def test_to_json_returns_a_copy_the_caller_cannot_use_to_alter_state(sandbox):
    data = sandbox.to_json()
    data["profile"]["first_name"] = "Changed"
    assert sandbox.profile["first_name"] == "Maria"


def test_build_does_not_modify_the_profile_it_was_given(sandbox):
    sandbox.call("request_refill", {"medication_name": "metformin"})
    assert EXAMPLE_PROFILE["medications"][0]["refills_remaining"] == 2
    assert "medications" in EXAMPLE_PROFILE


def test_it_accepts_the_whole_patient_entry_as_profile():
    built = Sandbox.build(EXAMPLE_ENTRY, EXAMPLE_ROSTER, 1, EXAMPLE_NOW)
    assert built.profile["first_name"] == "Maria"


def test_medications_get_stable_numbered_ids(sandbox):
    assert [m["id"] for m in sandbox.medications] == ["med-1", "med-2", "med-3", "med-4"]
    assert sandbox.medications[0]["name"] == "Metformin"


def test_medication_status_spellings_are_normalised():
    profile = {
        **EXAMPLE_PROFILE,
        "medications": [
            {"name": "A", "status": "pending renewal", "refills_remaining": 1},
            {"name": "B", "status": "Under Renewal", "refills_remaining": -3},
            {"name": "C", "status": "discontinued", "refills_remaining": "two"},
        ],
    }
    built = Sandbox.build(profile, EXAMPLE_ROSTER, 1, EXAMPLE_NOW)
    assert [m["status"] for m in built.medications] == ["under_renewal", "under_renewal", "past"]
    assert [m["refills_remaining"] for m in built.medications] == [1, 0, 0]


def test_pcp_is_a_primary_care_provider_suited_to_an_adult():
    for seed in range(30):
        pcp = build_example_sandbox(seed).pcp
        assert pcp["specialty"] in {"Family Medicine", "Internal Medicine", "Geriatric Medicine"}


def test_pcp_choice_varies_with_the_seed():
    assert len({build_example_sandbox(seed).pcp_id for seed in range(30)}) > 1


def test_child_gets_a_pediatric_or_family_pcp():
    child = {**EXAMPLE_PROFILE, "age": 8}
    roster = {
        **EXAMPLE_ROSTER,
        "providers": [
            *EXAMPLE_ROSTER["providers"][:11],
            {
                "id": "dr-99",
                "name": "Ivy Stone",
                "specialty": "Pediatrics",
                "credentials": "MD",
                "office_id": "office-1",
            },
        ],
    }
    for seed in range(20):
        pcp = Sandbox.build(child, roster, seed, EXAMPLE_NOW).pcp
        assert pcp["specialty"] in {"Pediatrics", "Family Medicine"}


def test_build_rejects_a_roster_without_suitable_primary_care():
    specialists = [
        p
        for p in EXAMPLE_ROSTER["providers"]
        if p["specialty"] not in {"Family Medicine", "Internal Medicine", "Geriatric Medicine"}
    ]
    roster = {**EXAMPLE_ROSTER, "providers": specialists + specialists[:3]}
    for index, provider in enumerate(roster["providers"]):
        roster["providers"][index] = {**provider, "id": f"x{index}", "name": f"Name {index}"}
    with pytest.raises(InvalidOutput, match="primary care"):
        Sandbox.build(EXAMPLE_PROFILE, roster, 1, EXAMPLE_NOW)


def test_slots_cover_weekdays_of_the_fourteen_day_window_only(sandbox):
    days = {date.fromisoformat(slot["date"]) for slot in sandbox.slots}
    assert min(days) >= date(2026, 11, 4)
    assert max(days) <= date(2026, 11, 17)
    assert all(day.weekday() < 5 for day in days)
    assert len(days) == 10


def test_no_slot_today_starts_before_now(sandbox):
    today = [slot for slot in sandbox.slots if slot["date"] == "2026-11-04"]
    assert today and all(slot["time"] > "09:30" for slot in today)


def test_every_provider_has_open_slots_of_every_type():
    sandbox = build_example_sandbox()
    for provider in sandbox.providers:
        assert any(slot["doctor_id"] == provider["id"] for slot in sandbox.slots)
    assert {slot["type"] for slot in sandbox.slots} == {"in-person", "telehealth", "phone"}


def test_open_slots_are_between_forty_and_seventy_percent_of_the_day_plan():
    # Later days have full plans (today's morning is past), so count days 2..13.
    sandbox = build_example_sandbox()
    later = [slot for slot in sandbox.slots if slot["date"] > "2026-11-04"]
    provider_days = len(sandbox.providers) * 9
    mean_planned = sum(SLOTS_PER_DAY) / 2
    share = len(later) / (provider_days * mean_planned)
    assert 0.4 <= share <= 0.7


def test_slot_ids_are_unique_and_all_open_at_start(sandbox):
    assert len({slot["id"] for slot in sandbox.slots}) == len(sandbox.slots)
    assert all(slot["status"] == "open" for slot in sandbox.slots)


def test_from_json_rejects_incomplete_state(sandbox):
    data = sandbox.to_json()
    del data["slots"]
    with pytest.raises(ValueError, match="slots"):
        Sandbox.from_json(data)


def test_from_json_rejects_an_unknown_version(sandbox):
    with pytest.raises(ValueError, match="version"):
        Sandbox.from_json({**sandbox.to_json(), "version": 99})
