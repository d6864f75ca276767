"""The sandbox's state: one conversation's mutable healthcare data, which the tools read and
change (the door they go through, `Sandbox.call`, is in door.py, above the tools).

Built from the patient profile, a validated roster, an integer seed and the conversation's
start time; everything random comes from random.Random(seed), so a build is reproducible. The
whole state serialises to JSON and back exactly, so a conversation's final state can be stored
and replayed.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import date, datetime
from typing import Any, Self

from benchmark.engine.sandbox.roster import patient_age, patient_profile, validate_roster
from benchmark.engine.sandbox.slots import generate_slots, window_dates
from benchmark.engine.sandbox.vocabulary import (
    normalise_medication_status,
    pcp_specialties_for_age,
)

STATE_VERSION = 1
QUEUE_LENGTH_AT_START = (0, 4)

_STATE_KEYS = (
    "version",
    "seed",
    "now",
    "profile",
    "medications",
    "offices",
    "providers",
    "pcp_id",
    "slots",
    "appointments",
    "messages",
    "queue_entries",
    "queue_lengths",
    "write_actions",
)


class SandboxState:
    """Use Sandbox.build or Sandbox.from_json (door.py): a Sandbox is this state with the
    door the tools go through."""

    def __init__(self, state: dict[str, Any]):
        self.seed: int = state["seed"]
        self.now: datetime = datetime.fromisoformat(state["now"])
        self.profile: dict[str, Any] = state["profile"]
        self.medications: list[dict[str, Any]] = state["medications"]
        self.offices: list[dict[str, Any]] = state["offices"]
        self.providers: list[dict[str, Any]] = state["providers"]
        self.pcp_id: str | None = state["pcp_id"]
        self.slots: list[dict[str, Any]] = state["slots"]
        self.appointments: list[dict[str, Any]] = state["appointments"]
        self.messages: list[dict[str, Any]] = state["messages"]
        self.queue_entries: list[dict[str, Any]] = state["queue_entries"]
        self.queue_lengths: dict[str, int] = state["queue_lengths"]
        self.write_actions: list[dict[str, Any]] = state["write_actions"]
        self.providers_by_id = {provider["id"]: provider for provider in self.providers}
        self.offices_by_id = {office["id"]: office for office in self.offices}
        self.slots_by_id = {slot["id"]: slot for slot in self.slots}

    @classmethod
    def build(
        cls, profile: dict[str, Any], roster: dict[str, Any], seed: int, now: datetime
    ) -> Self:
        """A fresh sandbox; raises structured.InvalidOutput if the roster breaks its schema."""
        profile = json_copy(patient_profile(profile))
        age = patient_age(profile)
        roster = validate_roster(roster, patient_age=age)
        rng = random.Random(seed)
        providers = roster["providers"]
        state = {
            "version": STATE_VERSION,
            "seed": seed,
            "now": now.isoformat(),
            "medications": _numbered_medications(profile.pop("medications", None)),
            "profile": profile,
            "offices": roster["offices"],
            "providers": providers,
            "pcp_id": _pick_pcp(providers, age, rng),
            "slots": generate_slots(providers, now, rng),
            "appointments": [],
            "messages": [],
            "queue_entries": [],
            "queue_lengths": {p["id"]: rng.randint(*QUEUE_LENGTH_AT_START) for p in providers},
            "write_actions": [],
        }
        return cls(state)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls._checked(json_copy(data))

    @classmethod
    def from_state_text(cls, text: str) -> Self:
        """The sandbox a state's JSON text holds (`state_text` or a snapshot), decoded once:
        its state is its own."""
        return cls._checked(json.loads(text))

    @classmethod
    def _checked(cls, data: dict[str, Any]) -> Self:
        missing = [key for key in _STATE_KEYS if key not in data]
        if missing:
            raise ValueError(f"sandbox state is missing: {', '.join(missing)}")
        if data["version"] != STATE_VERSION:
            raise ValueError(f"unsupported sandbox state version {data['version']!r}")
        return cls(data)

    def to_json(self) -> dict[str, Any]:
        """A deep copy of the state: later tool calls cannot change what the caller holds."""
        return json_copy(self._live_state())

    def snapshot(self) -> EncodedJSON:
        """The state as compact canonical JSON text (keys sorted), for storing: like to_json,
        a copy later tool calls cannot change, but encoded once (a conversation stores two
        ~50 KB states)."""
        return EncodedJSON(
            json.dumps(
                self._live_state(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
        )

    def state_text(self) -> str:
        """The state as compact JSON in the order it holds its keys (`from_state_text` gives
        back an equal sandbox that presents everything in the same order)."""
        return json.dumps(self._live_state(), separators=(",", ":"), ensure_ascii=False)

    def state_hash(self) -> str:
        return self.snapshot_and_hash()[1]

    def snapshot_and_hash(self) -> tuple[EncodedJSON, str]:
        """The snapshot and its hash from one encoding: the hash is the canonical text's."""
        snapshot = self.snapshot()
        return snapshot, hashlib.sha256(snapshot.encode("utf-8")).hexdigest()

    def _live_state(self) -> dict[str, Any]:
        """The state as a JSON-shaped dict that shares (not copies) the mutable parts."""
        return {
            "version": STATE_VERSION,
            "seed": self.seed,
            "now": self.now.isoformat(),
            "profile": self.profile,
            "medications": self.medications,
            "offices": self.offices,
            "providers": self.providers,
            "pcp_id": self.pcp_id,
            "slots": self.slots,
            "appointments": self.appointments,
            "messages": self.messages,
            "queue_entries": self.queue_entries,
            "queue_lengths": self.queue_lengths,
            "write_actions": self.write_actions,
        }

    @property
    def today(self) -> date:
        return self.now.date()

    @property
    def window(self) -> tuple[date, date]:
        return window_dates(self.now)

    @property
    def pcp(self) -> dict[str, Any] | None:
        return self.providers_by_id.get(self.pcp_id) if self.pcp_id else None


class EncodedJSON(str):
    """A JSON document already encoded: a field that stores JSON writes these characters
    instead of encoding the value again (benchmark.fields.CompressedJSONField)."""


def json_copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _pick_pcp(providers: list[dict[str, Any]], age: int | None, rng: random.Random) -> str:
    eligible = pcp_specialties_for_age(age)
    candidates = [provider["id"] for provider in providers if provider["specialty"] in eligible]
    return rng.choice(candidates)


def _numbered_medications(medications: Any) -> list[dict[str, Any]]:
    if not isinstance(medications, list):
        return []
    records = [m for m in medications if isinstance(m, dict) and isinstance(m.get("name"), str)]
    return [_medication_record(index, record) for index, record in enumerate(records, 1)]


def _medication_record(number: int, medication: dict[str, Any]) -> dict[str, Any]:
    refills = medication.get("refills_remaining")
    return {
        "id": f"med-{number}",
        **{key: value for key, value in medication.items() if key != "id"},
        # An unrecognised status counts as active: the enrichment schema already limits it.
        "status": normalise_medication_status(str(medication.get("status"))) or "active",
        "refills_remaining": max(refills, 0) if type(refills) is int else 0,
    }
