"""A case's starting sandbox built once per process (benchmark.engine.sandbox.builds): every
conversation gets the state a build of its own would give, in the same order, and shares none
of it."""

import copy

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.builds import sandbox_start
from benchmark.engine.sandbox.examples import (
    EXAMPLE_NOW,
    EXAMPLE_PROFILE,
    EXAMPLE_ROSTER,
    EXAMPLE_SEED,
)


def start(roster=EXAMPLE_ROSTER, seed=EXAMPLE_SEED):
    return sandbox_start(EXAMPLE_PROFILE, roster, seed, EXAMPLE_NOW)


def built(roster=EXAMPLE_ROSTER, seed=EXAMPLE_SEED) -> Sandbox:
    return Sandbox.build(profile=EXAMPLE_PROFILE, roster=roster, seed=seed, now=EXAMPLE_NOW)


def test_a_start_is_what_a_build_of_its_own_gives_in_the_same_order():
    for _ in range(2):  # built, then reused
        sandbox, snapshot = start()
        assert sandbox.state_text() == built().state_text()
        assert snapshot == built().snapshot()
        assert sandbox.now == EXAMPLE_NOW and sandbox.pcp == built().pcp


def test_each_conversation_gets_a_sandbox_of_its_own():
    first, _ = start()
    slot = first.slots[0]
    booked = first.call(
        "schedule_appointment",
        {"appointment_type": slot["type"], "preferred_date": slot["date"], "reason": "cough",
         "slot_id": slot["id"]},
    )  # fmt: skip
    assert booked.ok, booked.content

    second, snapshot = start()
    assert second.appointments == [] and second.write_actions == []
    assert second.state_text() == built().state_text()
    assert snapshot == built().snapshot()


def test_another_roster_or_seed_is_another_start():
    roster = copy.deepcopy(EXAMPLE_ROSTER)
    roster["providers"] = roster["providers"][:-1]
    assert start(roster=roster)[0].state_text() == built(roster=roster).state_text()
    assert start(roster=roster)[1] != start()[1]
    assert start(seed=EXAMPLE_SEED + 1)[1] == built(seed=EXAMPLE_SEED + 1).snapshot()
    assert start(seed=EXAMPLE_SEED + 1)[1] != start()[1]
