"""Random, often malformed, tool call sequences never break the sandbox's invariants."""

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.engine.sandbox import Sandbox, tool_specs
from benchmark.engine.sandbox.examples import build_example_sandbox

TOOL_NAMES = [spec.name for spec in tool_specs()]
ARGUMENT_NAMES = sorted({name for spec in tool_specs() for name in spec.parameters["properties"]})
_EXAMPLE = build_example_sandbox()
PLAUSIBLE_VALUES = [
    "2026-11-04",
    "2026-11-06",
    "2026-11-07",
    "2026-11-10",
    "2026-11-17",
    "2026-11-18",
    "2025-01-01",
    "PCP",
    "dr-01",
    "dr-05",
    "Helen Park",
    "dr. patel",
    "in-person",
    "video",
    "phone",
    "morning",
    "14:00",
    "evening",
    "routine",
    "urgent",
    "metformin",
    "Lisinopril",
    "glipizide",
    "Atorvastatin",
    "Amlodipine",
    "appt-1",
    "appt-2",
    "Cardiology",
    "primary care",
    "active",
    "past",
    "5125550111",
    "x@example.com",
    "Walgreens",
    *[slot["id"] for slot in _EXAMPLE.slots[:: max(1, len(_EXAMPLE.slots) // 12)]],
]

values = st.one_of(
    st.sampled_from(PLAUSIBLE_VALUES),
    st.text(max_size=30),
    st.integers(),
    st.booleans(),
    st.none(),
    st.lists(st.text(max_size=10), max_size=3),
    st.dictionaries(st.sampled_from(["zip", "state", "city", "planet"]), st.text(max_size=8)),
)
garbage_arguments = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(ARGUMENT_NAMES), st.text(max_size=8)), values, max_size=6
    ),
    st.text(max_size=40),
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES), values, max_size=6).map(json.dumps),
    st.none(),
    st.integers(),
)
garbage_call = st.tuples(
    st.one_of(st.sampled_from(TOOL_NAMES), st.text(max_size=12)), garbage_arguments
)
dates = st.sampled_from(PLAUSIBLE_VALUES[:6])
well_formed_call = st.one_of(
    st.builds(
        lambda kind, day, doctor, slot: (
            "schedule_appointment",
            {
                "appointment_type": kind,
                "preferred_date": day,
                "doctor": doctor,
                "reason": "check",
                "slot_id": slot,
            },
        ),
        st.sampled_from(["in-person", "telehealth", "phone"]),
        dates,
        st.sampled_from(["PCP", "dr-05", "dr-06", "Laura Chen"]),
        st.one_of(st.none(), st.sampled_from([s["id"] for s in _EXAMPLE.slots[:30]])),
    ),
    st.sampled_from(_EXAMPLE.slots[:40]).map(
        lambda slot: (
            "schedule_appointment",
            {
                "appointment_type": slot["type"],
                "preferred_date": slot["date"],
                "reason": "listed slot",
                "slot_id": slot["id"],
            },
        )
    ),
    st.builds(lambda n: ("cancel_appointment", {"appointment_id": f"appt-{n}"}), st.integers(1, 3)),
    st.builds(
        lambda name: ("request_refill", {"medication_name": name}),
        st.sampled_from(["metformin", "Atorvastatin", "lisinopril", "Glipizide"]),
    ),
    st.builds(
        lambda doctor: ("update_pcp", {"doctor": doctor}),
        st.sampled_from(["dr-01", "dr-02", "dr-03", "dr-04", "dr-11", "dr-05"]),
    ),
)
call_sequences = st.lists(st.one_of(garbage_call, well_formed_call), max_size=25)


def assert_invariants(sandbox: Sandbox) -> None:
    scheduled = [a for a in sandbox.appointments if a["status"] == "scheduled"]
    booked_by_appointments = Counter(a["slot_id"] for a in scheduled)
    assert all(count == 1 for count in booked_by_appointments.values()), "slot double-booked"
    booked_slots = {s["id"] for s in sandbox.slots if s["status"] == "booked"}
    assert booked_slots == set(booked_by_appointments)
    assert all(m["refills_remaining"] >= 0 for m in sandbox.medications)
    assert sandbox.pcp is not None


@settings(max_examples=60, deadline=None)
@given(call_sequences)
def test_random_call_sequences_keep_every_invariant(calls):
    sandbox = build_example_sandbox()
    for name, arguments in calls:
        before = sandbox.state_hash()
        result = sandbox.call(name, arguments)
        content = json.loads(result.content)
        assert isinstance(result.ok, bool)
        if not result.ok:
            assert "failed unexpectedly" not in content["error"]
            assert result.write_action is None and sandbox.state_hash() == before
        assert_invariants(sandbox)
    restored = Sandbox.from_json(json.loads(json.dumps(sandbox.to_json())))
    assert restored.to_json() == sandbox.to_json()
    assert restored.state_hash() == sandbox.state_hash()


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=2**63))
def test_the_same_seed_always_builds_the_same_sandbox(seed):
    assert build_example_sandbox(seed).to_json() == build_example_sandbox(seed).to_json()
