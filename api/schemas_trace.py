"""What the API answers of one conversation: its trace as one line of the run's JSON Lines
export holds it, every part declared. The sandbox's documents and a tool's arguments stay
free-form objects: each tool and each write takes its own fields."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import Field

from benchmark.models import ConversationStatus

# A JSON object whose keys the producer chooses (a tool's, the sandbox's, a distribution's).
FreeObject = dict[str, Any]


class TraceAgentOut(Schema):
    label: str
    model: str
    agent_config: str | None = Field(description="The agent configuration's slug")
    scripted: bool = Field(description="A scripted agent, not a model")


class TraceCaseOut(Schema):
    entry_index: int
    seed: FreeObject = Field(description="The sampled seed: the distribution's columns")
    profile: FreeObject | None = Field(description="The enriched patient profile")
    story: str
    complexity: str


class RoleUsageOut(Schema):
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(None, description="USD; null when a call had no price")


class TraceEventOut(Schema):
    """One event: a patient or assistant message (a turn), a tool call and its result (paired
    by tool_call_id), the model's reasoning, or an error."""

    event_id: str = Field(description="e0001, e0002, ... in conversation order")
    turn: int = Field(description="The assistant turn it belongs to (the opening message: 1)")
    kind: str = Field(
        description="patient_message, assistant_message, tool_call, tool_result, reasoning, error"
    )
    content: str
    tool_name: str
    tool_call_id: str
    arguments: FreeObject | str | None = Field(
        description="A tool call's arguments (the raw text when they were not valid JSON)"
    )
    ok: bool | None = Field(description="A tool result's outcome (null on other events)")
    model_role: str = Field(description="patient, assistant, or '' for a tool result")
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    cached: bool
    retries: int = Field(description="Provider faults asked again before this answer")
    refused: bool = Field(description="The model declined to answer")


class ConversationTraceOut(Schema):
    conversation_id: uuid.UUID
    run: str = Field(description="The run's name")
    agent: TraceAgentOut
    patient_model: str
    case: TraceCaseOut
    repetition: int
    seed: int
    clock: datetime | None = Field(description="The sandbox's simulated now")
    status: ConversationStatus
    termination_reason: str
    error: str
    assistant_turns: int
    usage: dict[str, RoleUsageOut] = Field(description="patient / assistant -> their calls")
    cost_usd: float | None
    final_state_hash: str
    write_actions: list[FreeObject] = Field(description="The sandbox's writes, in order")
    sandbox_initial: FreeObject | None = Field(description="The sandbox state at the start")
    sandbox_final: FreeObject | None = Field(description="The sandbox state at the end")
    events: list[TraceEventOut]
