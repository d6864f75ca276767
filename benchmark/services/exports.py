"""JSONL export of a run: one conversation per line with its full trace."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.core.serializers.json import DjangoJSONEncoder

from benchmark.models import Conversation, Run, TraceEvent

BATCH = 200


def run_jsonl(run: Run) -> Iterator[str]:
    """Stream lines; conversations are fetched in batches so memory stays flat."""
    conversations = run.conversations.select_related(
        "run", "run_agent__agent_config", "entry"
    ).order_by("pk")
    last_pk = 0
    while True:
        batch = list(conversations.filter(pk__gt=last_pk)[:BATCH])
        if not batch:
            return
        events = _events_by_conversation(batch)
        for conversation in batch:
            record = conversation_record(conversation, events.get(conversation.pk, []))
            yield json.dumps(record, cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"
        last_pk = batch[-1].pk


def _events_by_conversation(batch: list[Conversation]) -> dict[int, list[dict]]:
    grouped: dict[int, list[dict]] = {}
    rows = TraceEvent.objects.filter(conversation__in=batch).order_by("conversation_id", "seq")
    for row in rows.values("conversation_id", *TraceEvent.ENGINE_FIELDS):
        grouped.setdefault(row.pop("conversation_id"), []).append(row)
    return grouped


def conversation_record(conversation: Conversation, events: list[dict]) -> dict:
    agent = conversation.run_agent
    entry = conversation.entry
    return {
        "conversation_id": str(conversation.public_id),
        "run": conversation.run.name,
        "agent": {
            "label": agent.label,
            "model": agent.model,
            "agent_config": agent.agent_config.slug if agent.agent_config else None,
            "scripted": agent.is_scripted,
        },
        "patient_model": conversation.run.patient_model,
        "case": {
            "entry_index": entry.index,
            "seed": entry.seed,
            "profile": entry.profile,
            "story": entry.story,
            "complexity": entry.complexity,
        },
        "repetition": conversation.repetition,
        "seed": conversation.seed,
        "clock": conversation.clock or conversation.run.config.get("clock"),
        "status": conversation.status,
        "termination_reason": conversation.termination_reason,
        "error": conversation.error,
        "assistant_turns": conversation.assistant_turns,
        "usage": conversation.usage,
        "cost_usd": conversation.cost_usd,
        "final_state_hash": conversation.final_state_hash,
        "write_actions": conversation.write_actions,
        "sandbox_initial": conversation.sandbox_initial,
        "sandbox_final": conversation.sandbox_final,
        "events": events,
    }
