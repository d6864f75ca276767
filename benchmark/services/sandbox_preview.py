"""What a sandbox looks like: a preview for an entry, and before/after for a conversation."""

from __future__ import annotations

import json
from collections import Counter

from django.utils import timezone

from benchmark.engine.sandbox import Sandbox
from benchmark.engine.sandbox.roster_script import build_roster
from benchmark.engine.seeds import derive_seed
from benchmark.models import BenchmarkEntry, Conversation, EntryStatus

CHANGE_KEYS = ("profile", "medications", "appointments", "messages", "queue_entries", "pcp_id")


def entry_sandbox_preview(entry: BenchmarkEntry) -> dict | None:
    """The sandbox this entry would get, with the scripted roster (no model call, no cost).

    Runs generate their roster with the run's roster model; the conversation page shows that
    exact sandbox.
    """
    if entry.status != EntryStatus.READY or entry.benchmark_set.imported:
        return None  # an imported case has no record to build a sandbox from
    seed = derive_seed("preview", entry.benchmark_set_id, entry.index)
    now = timezone.now().replace(hour=9, minute=0, second=0, microsecond=0)
    state = Sandbox.build(
        profile=entry.profile, roster=build_roster(entry.profile, seed), seed=seed, now=now
    ).to_json()
    return sandbox_summary(state)


def sandbox_summary(state: dict) -> dict:
    providers = {p["id"]: p for p in state["providers"]}
    open_slots = [s for s in state["slots"] if s.get("status", "open") == "open"]
    return {
        "now": state["now"],
        "offices": state["offices"],
        "providers": state["providers"],
        "pcp": providers.get(state.get("pcp_id")),
        "slot_count": len(state["slots"]),
        "open_count": len(open_slots),
        "open_by_type": sorted(Counter(s.get("type", "?") for s in open_slots).items()),
        "medications": state["medications"],
    }


def sandbox_changes(conversation: Conversation) -> list[dict]:
    """Top-level parts of the state that the conversation changed, before and after."""
    before, after = conversation.sandbox_initial, conversation.sandbox_final
    if not before or not after:
        return []
    return [
        {"part": key, "before": _pretty(before.get(key)), "after": _pretty(after.get(key))}
        for key in CHANGE_KEYS
        if before.get(key) != after.get(key)
    ]


def _pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
