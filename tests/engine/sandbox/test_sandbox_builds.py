"""A case's starting sandbox built once per process (benchmark.engine.sandbox.builds): every
conversation gets the state a build of its own would give, in the same order, and shares none
of it."""

import copy
from datetime import UTC

import pytest

from benchmark.engine.sandbox import Sandbox, builds
from benchmark.engine.sandbox.builds import sandbox_start
from benchmark.engine.sandbox.examples import (
    EXAMPLE_NOW,
    EXAMPLE_PROFILE,
    EXAMPLE_ROSTER,
    EXAMPLE_SEED,
)


@pytest.fixture(autouse=True)
def no_kept_starts():
    builds._start.cache_clear()


def start(roster=EXAMPLE_ROSTER, seed=EXAMPLE_SEED, now=EXAMPLE_NOW):
    return sandbox_start(EXAMPLE_PROFILE, roster, seed, now)


def built(roster=EXAMPLE_ROSTER, seed=EXAMPLE_SEED) -> Sandbox:
    return Sandbox.build(profile=EXAMPLE_PROFILE, roster=roster, seed=seed, now=EXAMPLE_NOW)


def test_a_start_is_what_a_build_of_its_own_gives_in_the_same_order():
    for _ in range(2):  # built, then reused
        sandbox, snapshot = start()
        assert sandbox.state_text() == built().state_text()
        assert snapshot == built().snapshot()
        assert sandbox.now == EXAMPLE_NOW and sandbox.pcp == built().pcp
    assert builds._start.cache_info().misses == 1  # the second start was not built again


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


def test_the_same_instant_in_another_time_zone_is_another_start():
    # The sandbox's days and clock are those of the time it is given.
    elsewhere = EXAMPLE_NOW.astimezone(UTC)
    assert elsewhere == EXAMPLE_NOW
    start()
    moved, _ = start(now=elsewhere)
    assert moved.now.utcoffset() != EXAMPLE_NOW.utcoffset()
    assert (
        moved.state_text()
        == Sandbox.build(
            profile=EXAMPLE_PROFILE, roster=EXAMPLE_ROSTER, seed=EXAMPLE_SEED, now=elsewhere
        ).state_text()
    )
