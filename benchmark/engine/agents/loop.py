"""The conversation loop: a simulated patient talks with a tool-using assistant in a sandbox.

Both sides share one timestamp. The patient opens; each assistant turn is a ReAct loop whose
tool calls and results go into the trace but never reach the patient, and whose reasoning is
stripped before the patient sees the answer. The loop never raises: provider failures,
malformed model output and bugs end the conversation with a termination reason and an error
message, keeping every event recorded so far.

Accounting: a model call's tokens, latency and cost sit on the one event that carries its
answer (the patient or assistant message, or the first tool call of a tool round). The
per-role totals in ConversationOutcome.usage also count calls that produced no event.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from benchmark.engine.agents.agent_config import AgentConfig, AgentConfigError
from benchmark.engine.agents.personalities import PersonalityError
from benchmark.engine.agents.prompts import (
    TERMINATION_TOKEN,
    PromptError,
    is_caregiver_voice,
    patient_opening_cue,
    render_patient_system,
)
from benchmark.engine.sandbox import tool_specs
from llm.engine.chat import (
    ChatRequest,
    ChatResponse,
    Message,
    ProviderError,
    ToolCall,
    ToolSpec,
)
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import ChatClient

logger = logging.getLogger(__name__)

TERMINATION_REASONS = ("patient_ended", "turn_cap", "agent_error", "provider_error", "cancelled")
EVENT_KINDS = (
    "patient_message",
    "assistant_message",
    "tool_call",
    "tool_result",
    "reasoning",
    "error",
)
ROLES = ("patient", "assistant")

_THINK_BLOCK = re.compile(r"<(think|thinking)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking)>", re.IGNORECASE)


class ToolResultLike(Protocol):
    ok: bool
    content: str


class SandboxLike(Protocol):
    def call(self, name: str, arguments: dict[str, Any] | str) -> ToolResultLike: ...


@dataclass(frozen=True)
class CaseInput:
    """What the loop needs from a case: the patient entry and the seed it was made from."""

    profile: dict[str, Any]
    story: str
    seed: dict[str, Any]  # condition, task_category, task_subcategory, personality, ...

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any], seed: Mapping[str, Any]) -> CaseInput:
        return cls(
            profile=dict(entry["patient_profile"]),
            story=str(entry["patient_story"]),
            seed=dict(seed),
        )

    @property
    def personality(self) -> str:
        return str(self.seed.get("personality", ""))

    @property
    def task_category(self) -> str:
        return str(self.seed.get("task_category", ""))

    @property
    def task_subcategory(self) -> str:
        return str(self.seed.get("task_subcategory", ""))


@dataclass(frozen=True)
class TraceEvent:
    event_id: str  # "e0001", "e0002", ... in conversation order
    turn: int  # the assistant turn the event belongs to; the opening message is turn 1
    kind: str  # one of EVENT_KINDS
    content: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    arguments: dict[str, Any] | str | None = None  # parsed dict, or the raw text if malformed
    ok: bool | None = None  # tool results only
    model_role: str = ""  # "patient", "assistant" or "" for tool results
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: Decimal | None = None
    cached: bool = False
    retries: int = 0  # provider faults asked again before this call's answer came
    refused: bool = False  # the model declined to answer (ChatResponse.refusal)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = None if self.cost_usd is None else str(self.cost_usd)
        return data


@dataclass
class ConversationOutcome:
    events: list[TraceEvent]
    termination_reason: str  # one of TERMINATION_REASONS
    error: str
    assistant_turns: int
    # {"patient"|"assistant": {calls, input_tokens, output_tokens, cost_usd}}; cost_usd is None
    # when any call of that role had an unknown price.
    usage: dict[str, dict[str, Any]]
    sandbox: SandboxLike  # final state: callers store to_json(), state_hash(), write_actions
    patient_system: str = ""
    assistant_system: str = ""


def events_to_dicts(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    return [event.to_dict() for event in events]


def run_conversation(
    *,
    case: CaseInput,
    sandbox: SandboxLike,
    patient_client: ChatClient,
    assistant_client: ChatClient,
    patient_model: str,
    assistant_model: str,
    agent: AgentConfig,
    now: datetime,
    max_turns: int = 15,
    max_tool_rounds_per_turn: int = 8,
    should_stop: Callable[[], bool] | None = None,
    on_event: Callable[[TraceEvent], None] | None = None,
    tools: Sequence[ToolSpec] | None = None,
    sample: str = "",
) -> ConversationOutcome:
    """Play one conversation to its end. Never raises once the arguments are valid.

    `tools` defaults to the sandbox's 15 tool specs. `sample` names this conversation as one
    draw (e.g. its seed) on every model call: repetitions never share cached answers, while
    replaying the same conversation does.
    """
    if max_turns < 1 or max_tool_rounds_per_turn < 0:
        raise ValueError("max_turns must be >= 1 and max_tool_rounds_per_turn >= 0")
    conversation = _Conversation(
        case=case,
        sandbox=sandbox,
        clients={"patient": patient_client, "assistant": assistant_client},
        models={"patient": patient_model, "assistant": assistant_model},
        agent=agent,
        now=now,
        tools=tuple(tools) if tools is not None else None,
        max_tool_rounds=max_tool_rounds_per_turn,
        should_stop=should_stop,
        on_event=on_event,
        sample=sample,
    )
    reason, error = conversation.play(max_turns)
    return ConversationOutcome(
        events=conversation.events,
        termination_reason=reason,
        error=error,
        assistant_turns=conversation.assistant_turns,
        usage={role: totals.as_dict() for role, totals in conversation.usage.items()},
        sandbox=sandbox,
        patient_system=conversation.patient_system,
        assistant_system=conversation.assistant_system,
    )


def split_reasoning(text: str) -> tuple[str, str]:
    """Separate <think>/<thinking> blocks from the visible text: (visible, reasoning)."""
    thoughts = [match.group(2).strip() for match in _THINK_BLOCK.finditer(text or "")]
    visible = _THINK_BLOCK.sub("", text or "")
    # An unclosed block (the answer was cut off while thinking) hides everything after it.
    opening = _THINK_OPEN.search(visible)
    if opening:
        thoughts.append(visible[opening.end() :].strip())
        visible = visible[: opening.start()]
    # Some models emit only the closing tag, their reasoning running from the very start.
    closings = list(_THINK_CLOSE.finditer(visible))
    if closings:
        thoughts.append(visible[: closings[-1].start()].strip())
        visible = visible[closings[-1].end() :]
    return visible.strip(), "\n\n".join(thought for thought in thoughts if thought)


def parse_tool_arguments(raw: str | None) -> dict[str, Any] | str:
    """The arguments as a dict, or the raw text when it is not a JSON object.

    The sandbox turns raw text into a tool error the model can read and correct.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    return value if isinstance(value, dict) else raw


# Errors of the case, the agent configuration or the prompts, which say what to fix.
_CASE_PROBLEMS = (PersonalityError, PromptError, AgentConfigError)


class _Ended(Exception):
    def __init__(self, reason: str, error: str = "", role: str = ""):
        super().__init__(error or reason)
        self.reason = reason
        self.error = error
        self.role = role


@dataclass
class _RoleUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = field(default_factory=lambda: Decimal("0"))

    def add(self, response: ChatResponse) -> None:
        self.calls += 1
        self.input_tokens += response.usage.input_tokens
        self.output_tokens += response.usage.output_tokens
        if self.cost_usd is None or response.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += response.cost_usd

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }


class _Conversation:
    def __init__(
        self,
        *,
        case: CaseInput,
        sandbox: SandboxLike,
        clients: dict[str, ChatClient],
        models: dict[str, str],
        agent: AgentConfig,
        now: datetime,
        tools: tuple[ToolSpec, ...] | None,
        max_tool_rounds: int,
        should_stop: Callable[[], bool] | None,
        on_event: Callable[[TraceEvent], None] | None,
        sample: str,
    ):
        self.case = case
        self.sample = sample
        self.sandbox = sandbox
        self.clients = clients
        self.models = models
        self.agent = agent
        self.now = now
        self.tools = tools
        self.max_tool_rounds = max_tool_rounds
        self.should_stop = should_stop
        self.on_event = on_event
        self.events: list[TraceEvent] = []
        self.usage = {role: _RoleUsage() for role in ROLES}
        self.turn = 1
        self.assistant_turns = 0
        self.patient_system = ""
        self.assistant_system = ""
        # Each side's own view of the dialogue. The patient sees the assistant as "user".
        self.patient_view: list[Message] = []
        self.assistant_view: list[Message] = []
        self.used_call_ids: set[str] = set()

    def play(self, max_turns: int) -> tuple[str, str]:
        try:
            self._prepare()
            self._patient_turn()
            while True:
                self._assistant_turn()
                self.assistant_turns += 1
                if self.assistant_turns >= max_turns:
                    return "turn_cap", ""
                self.turn += 1
                self._patient_turn()
        except _Ended as ended:
            return self._end(ended)
        except _CASE_PROBLEMS as problem:  # written for people: a case or prompt to fix
            return self._end(_Ended("agent_error", str(problem)))
        except Exception as error:  # noqa: BLE001 - the loop must never take its caller down
            logger.exception("the conversation loop stopped on an unexpected error")
            return self._end(_Ended("agent_error", failure_text(error)))

    def _end(self, ended: _Ended) -> tuple[str, str]:
        if ended.reason in ("agent_error", "provider_error"):
            # The event is stored before on_event runs; a failing callback (possibly the very
            # error being reported) must not stop the outcome from being returned.
            with contextlib.suppress(Exception):
                self._record(kind="error", content=ended.error, model_role=ended.role)
        return ended.reason, ended.error

    def _prepare(self) -> None:
        if self.tools is None:
            self.tools = tuple(tool_specs())
        case = self.case
        self.patient_system = render_patient_system(
            profile=case.profile, story=case.story, seed=case.seed, now=self.now
        )
        self.assistant_system = self.agent.render_system(profile=case.profile, now=self.now)
        # Chat APIs want a user turn first, so the patient answers a neutral cue when opening.
        self.patient_view.append(Message(role="user", content=patient_opening_cue()))

    def _patient_turn(self) -> None:
        case = self.case
        hints = {
            "profile": case.profile,
            "story": case.story,
            "seed": case.seed,
            "personality": case.personality,
            "turn": self.turn,
            "caregiver": is_caregiver_voice(case.profile, case.seed),
        }
        response = self._call("patient", self.patient_system, self.patient_view, (), hints)
        visible = self._visible_text("patient", response)
        ended = TERMINATION_TOKEN in visible
        # Stored without the token; a bare token leaves an empty message, kept so that every
        # model call stays visible in the trace.
        if response.refusal:
            self._record(
                kind="patient_message",
                model_role="patient",
                response=response,
                refused=True,
            )
            raise _Ended("agent_error", f"the patient model refused: {response.refusal}", "patient")
        message = visible.replace(TERMINATION_TOKEN, "").strip()
        self._record(
            kind="patient_message", content=message, model_role="patient", response=response
        )
        if ended:
            raise _Ended("patient_ended")
        if not message:
            raise _Ended("agent_error", "the patient model returned an empty message", "patient")
        self.patient_view.append(Message(role="assistant", content=message))
        self.assistant_view.append(Message(role="user", content=message))

    def _assistant_turn(self) -> None:
        hints = {"profile": self.case.profile, "turn": self.turn, "now": self.now.isoformat()}
        for tool_round in range(self.max_tool_rounds + 1):
            response = self._call(
                "assistant", self.assistant_system, self.assistant_view, self.tools, hints
            )
            visible = self._visible_text(
                "assistant", response, tool_round=bool(response.tool_calls)
            )
            if not response.tool_calls:
                self._answer_patient(response, visible)
                return
            if tool_round == self.max_tool_rounds:
                raise _Ended(
                    "agent_error",
                    f"the assistant was still calling tools after {self.max_tool_rounds} "
                    "tool rounds in one turn",
                    "assistant",
                )
            self._run_tools(response, visible)

    def _answer_patient(self, response: ChatResponse, visible: str) -> None:
        """The assistant's reply reaches the patient. A refusal is a reply too (an app would
        show its words, and the judges weigh it), marked refused in the trace."""
        said = visible or response.refusal_words
        refused = bool(response.refusal)
        if not said and not refused:
            raise _Ended("agent_error", "the assistant returned an empty answer", "assistant")
        self._record(
            kind="assistant_message",
            content=said,
            model_role="assistant",
            response=response,
            refused=refused,
        )
        if not said:
            raise _Ended("agent_error", "the assistant refused without a word", "assistant")
        self.assistant_view.append(Message(role="assistant", content=said))
        self.patient_view.append(Message(role="user", content=said))

    def _run_tools(self, response: ChatResponse, narration: str) -> None:
        calls = tuple(self._with_unique_id(call) for call in response.tool_calls)
        self.assistant_view.append(
            Message(
                role="assistant",
                content=narration,
                tool_calls=calls,
                reasoning_blocks=response.reasoning_blocks,
            )
        )
        for index, call in enumerate(calls):
            arguments = parse_tool_arguments(call.arguments)
            self._record(
                kind="tool_call",
                tool_name=call.name,
                tool_call_id=call.id,
                arguments=arguments,
                model_role="assistant",
                response=response if index == 0 else None,
            )
            result = self.sandbox.call(call.name, arguments)
            self._record(
                kind="tool_result",
                content=result.content,
                tool_name=call.name,
                tool_call_id=call.id,
                ok=result.ok,
            )
            self.assistant_view.append(
                Message(
                    role="tool", content=result.content, tool_call_id=call.id, tool_name=call.name
                )
            )

    def _call(
        self,
        role: str,
        system: str,
        messages: list[Message],
        tools: tuple[ToolSpec, ...] | None,
        hints: dict[str, Any],
    ) -> ChatResponse:
        if self.should_stop is not None and self.should_stop():
            raise _Ended("cancelled")
        request = ChatRequest(
            model=self.models[role],
            purpose=role,
            system=system,
            messages=tuple(messages),
            tools=tools or (),
            hints=hints,
            sample=self.sample,
            # Each turn re-sends the last one's prompt and a few messages more: cached.
            cache_latest=True,
        )
        try:
            response = self.clients[role].chat(request)
        except Exception as error:  # noqa: BLE001 - see below
            # Whatever fails inside the call machinery (client, cache, adapter) is not the
            # agent's doing: it is recorded as a provider fault, which a retry can re-run.
            if not isinstance(error, ProviderError):
                logger.exception("the %s model call failed unexpectedly", role)
            message = f"{role} model call failed: {failure_text(error)}"
            raise _Ended("provider_error", message, role) from error
        self.usage[role].add(response)
        return response

    def _visible_text(self, role: str, response: ChatResponse, *, tool_round: bool = False) -> str:
        """Record hidden reasoning and return what the other side may see.

        Text that comes with tool calls is the model narrating its work; the patient never
        sees it, so it is kept in the trace as reasoning.
        """
        visible, thinking = split_reasoning(response.text)
        hidden = [part for part in (response.reasoning.strip(), thinking) if part]
        if tool_round and visible:
            hidden.append(visible)
        if hidden:
            self._record(kind="reasoning", content="\n\n".join(hidden), model_role=role)
        return visible

    def _with_unique_id(self, call: ToolCall) -> ToolCall:
        # Tool results are matched to calls by id, so an empty or repeated id would pair a
        # result with the wrong call.
        if not call.id or call.id in self.used_call_ids:
            number = len(self.used_call_ids) + 1
            while f"call_{number:04d}" in self.used_call_ids:
                number += 1
            call = replace(call, id=f"call_{number:04d}")
        self.used_call_ids.add(call.id)
        return call

    def _record(self, *, kind: str, response: ChatResponse | None = None, **fields: Any) -> None:
        accounting = {}
        if response is not None:
            accounting = {
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
                "latency_ms": response.latency_ms,
                "cost_usd": response.cost_usd,
                "cached": response.cached,
                "retries": sum(response.retries.values()),
            }
        event = TraceEvent(
            event_id=f"e{len(self.events) + 1:04d}",
            turn=self.turn,
            kind=kind,
            **fields,
            **accounting,
        )
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)
