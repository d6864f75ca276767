"""A case's starting sandbox, built once per process.

Every agent's conversation of a case starts from the same sandbox: the same profile, roster,
seed and start time give the same state (a build is reproducible, state.py). Building it
(hundreds of procedural slots) and encoding its snapshot was about a tenth of a conversation's
own CPU, paid again by every agent. A process now builds it once, keeps its texts, and gives
each conversation a state of its own decoded from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from benchmark.engine.sandbox.door import Sandbox
from benchmark.engine.sandbox.state import EncodedJSON

# The starts of the cases a process plays at once (cases are dispatched one after the other).
CASES_KEPT = 32


@dataclass(frozen=True)
class _Start:
    snapshot: EncodedJSON  # canonical (keys sorted): what a conversation stores as its start
    state: str  # the same state in the order the build made it, as every build presents it


def sandbox_start(
    profile: dict[str, Any], roster: dict[str, Any], seed: int, now: datetime
) -> tuple[Sandbox, EncodedJSON]:
    """A new sandbox of the case, nothing shared with any other, and its snapshot; raises what
    Sandbox.build raises. The inputs' own text is the key, so a changed profile or roster is
    a different start."""
    # The time as text: one instant in two time zones is one datetime key, but not one build
    # (the sandbox's days and its clock are local to the time it is given).
    start = _start(_text(profile), _text(roster), seed, now.isoformat())
    return Sandbox.from_state_text(start.state), start.snapshot


@lru_cache(maxsize=CASES_KEPT)
def _start(profile: str, roster: str, seed: int, now: str) -> _Start:
    sandbox = Sandbox.build(
        profile=json.loads(profile),
        roster=json.loads(roster),
        seed=seed,
        now=datetime.fromisoformat(now),
    )
    return _Start(sandbox.snapshot(), sandbox.state_text())


def _text(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
