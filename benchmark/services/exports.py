"""Exports of a run: one conversation per line with its full trace (JSONL), or per row
(Parquet, the nested parts as JSON text); both stream, a batch of conversations at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.core.serializers.json import DjangoJSONEncoder

from benchmark.engine.parquet_export import Column, parquet_chunks
from benchmark.models import Conversation, Run, TraceEvent

BATCH = 200
# A conversation record as Parquet columns: the record's fields, `agent` and `case` spread
# into their own columns.
CONVERSATION_COLUMNS = (
    Column("conversation_id"),
    Column("run"),
    Column("agent_label"),
    Column("agent_model"),
    Column("agent_agent_config"),
    Column("agent_scripted", "bool"),
    Column("patient_model"),
    Column("case_entry_index", "int"),
    Column("case_seed", "json"),
    Column("case_profile", "json"),
    Column("case_story"),
    Column("case_complexity"),
    Column("repetition", "int"),
    Column("seed", "int"),
    Column("clock"),
    Column("status"),
    Column("termination_reason"),
    Column("error"),
    Column("assistant_turns", "int"),
    Column("usage", "json"),
    Column("cost_usd", "float"),
    Column("final_state_hash"),
    Column("write_actions", "json"),
    Column("sandbox_initial", "json"),
    Column("sandbox_final", "json"),
    Column("events", "json"),
)
SPREAD = ("agent", "case")


def run_jsonl(run: Run) -> Iterator[str]:
    """Stream lines; conversations are fetched in batches so memory stays flat."""
    for record in run_records(run):
        yield json.dumps(record, cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"


def run_parquet(run: Run) -> Iterator[bytes]:
    """The same records as Parquet rows, a row group per batch of conversations."""
    return parquet_chunks(map(_spread, run_records(run)), CONVERSATION_COLUMNS, row_group=BATCH)


def _spread(record: dict) -> dict:
    row = {key: value for key, value in record.items() if key not in SPREAD}
    for key in SPREAD:
        row |= {f"{key}_{name}": value for name, value in record[key].items()}
    return row


def run_records(run: Run) -> Iterator[dict]:
    """Every conversation of the run as its export record, in id order."""
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
            yield conversation_record(conversation, events.get(conversation.pk, []))
        last_pk = batch[-1].pk


def conversation_events(conversation: Conversation) -> list[dict]:
    """One conversation's trace as its line of the export holds it (the API's trace)."""
    return _events_by_conversation([conversation]).get(conversation.pk, [])


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
