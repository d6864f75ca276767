"""CPU cost of the sandbox: builds, tool calls, and a whole conversation's worth of both.

Run directly (`python bench/bench_sandbox.py`) or call run() from a bench runner. Times are
CPU seconds (time.process_time), so a busy machine skews them less than wall time would.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmark.engine.sandbox import Sandbox  # noqa: E402
from benchmark.engine.sandbox.examples import (  # noqa: E402
    EXAMPLE_NOW,
    EXAMPLE_PROFILE,
    EXAMPLE_ROSTER,
)

BUILDS = 1_000
CALLS = 10_000
CALLS_PER_CONVERSATION = 50
CONVERSATIONS = 200

BUILD_TARGET_SECONDS = 3.0
CALLS_PER_SECOND_TARGET = 10_000
CONVERSATION_TARGET_MS = 5.0

_DATES = [f"2026-11-{day:02d}" for day in range(4, 18)]
_DOCTORS = ["PCP", "dr-01", "dr-05", "Helen Park", "Laura Chen", "dr. osei"]
_MEDICATIONS = ["metformin", "Lisinopril", "atorvastatin", "glipizide", "Amlodipine"]


def _random_arguments(rng: random.Random) -> dict[str, Callable[[], object]]:
    """Per tool, a maker of plausible arguments (some of which the tool will refuse)."""

    def date_range() -> dict[str, str]:
        start = rng.randrange(len(_DATES))
        end = min(len(_DATES) - 1, start + rng.randrange(4))
        return {"start_date": _DATES[start], "end_date": _DATES[end]}

    return {
        "list_doctors": lambda: rng.choice([{}, {"specialty": "cardiology"}]),
        "get_available_appointments": lambda: {**date_range(), "doctor": rng.choice(_DOCTORS)},
        "schedule_appointment": lambda: {
            "appointment_type": rng.choice(["video", "in person", "phone"]),
            "preferred_date": rng.choice(_DATES),
            "preferred_time": rng.choice(["morning", "afternoon", "10:30"]),
            "doctor": rng.choice(_DOCTORS),
            "reason": "follow-up visit",
        },
        "cancel_appointment": lambda: {"appointment_id": f"appt-{rng.randint(1, 3)}"},
        "list_appointments": lambda: {},
        "list_medications": lambda: {},
        "request_refill": lambda: {"medication_name": rng.choice(_MEDICATIONS)},
        "request_new_prescription": lambda: {
            "medication_name": rng.choice(_MEDICATIONS),
            "reason": "blood pressure still high",
        },
        "message_pcp": lambda: {
            "reason": "dizziness",
            "message": "Feeling dizzy when standing up since Monday.",
            "urgency": rng.choice(["routine", "urgent"]),
        },
        "join_virtual_call_queue": lambda: {"doctor": rng.choice(_DOCTORS)},
        "get_profile": lambda: {},
        "update_pcp": lambda: {"doctor": rng.choice(["dr-01", "dr-02", "dr-03", "dr-05"])},
        "update_pharmacy": lambda: {"name": "Walgreens", "phone": "512-555-0177"},
        "update_insurance": lambda: {"provider": "Aetna", "plan_type": "HMO"},
        "update_contact_info": lambda: {"email": "maria@example.org"},
        "not_a_tool": lambda: '{"broken json',
    }


def _call_plan(seed: int, count: int) -> list[tuple[str, object]]:
    rng = random.Random(seed)
    makers = _random_arguments(rng)
    names = sorted(makers)
    return [(name, makers[name]()) for name in (rng.choice(names) for _ in range(count))]


def _build(seed: int) -> Sandbox:
    return Sandbox.build(EXAMPLE_PROFILE, EXAMPLE_ROSTER, seed, EXAMPLE_NOW)


def _cpu(action: Callable[[], object]) -> float:
    started = time.process_time()
    action()
    return time.process_time() - started


def measure_builds() -> dict:
    seconds = _cpu(lambda: [_build(seed) for seed in range(BUILDS)])
    return _result(f"build {BUILDS:,} sandboxes", seconds, BUILD_TARGET_SECONDS, "s", "<=")


def measure_calls() -> dict:
    sandboxes = [_build(seed) for seed in range(CALLS // CALLS_PER_CONVERSATION)]
    plan = _call_plan(1, CALLS)

    def run_calls() -> None:
        for index, (name, arguments) in enumerate(plan):
            sandboxes[index // CALLS_PER_CONVERSATION].call(name, arguments)

    rate = CALLS / max(_cpu(run_calls), 1e-9)
    return _result("tool calls per CPU second", rate, CALLS_PER_SECOND_TARGET, "calls/s", ">=")


def measure_conversations() -> dict:
    plans = [_call_plan(seed, CALLS_PER_CONVERSATION) for seed in range(CONVERSATIONS)]

    def run_conversations() -> None:
        for seed, plan in enumerate(plans):
            sandbox = _build(seed)
            for name, arguments in plan:
                sandbox.call(name, arguments)

    milliseconds = _cpu(run_conversations) / CONVERSATIONS * 1000
    return _result(
        f"sandbox build + {CALLS_PER_CONVERSATION} tool calls",
        milliseconds,
        CONVERSATION_TARGET_MS,
        "ms",
        "<=",
    )


def _result(name: str, measured: float, target: float, unit: str, direction: str) -> dict:
    """One bench line; `goal` says whether the target is a ceiling ("<=") or a floor (">=")."""
    ok = measured <= target if direction == "<=" else measured >= target
    return {
        "name": name,
        "measured": round(measured, 3),
        "target": target,
        "unit": unit,
        "ok": ok,
        "goal": direction,
    }


def run() -> list[dict]:
    return [measure_builds(), measure_calls(), measure_conversations()]


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
