"""Provider-neutral chat types shared by every model call in the project.

Pure Python, no Django. Providers translate these to and from their wire formats; the
conversation loop, enrichment, roster generation and the jury only ever see these types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from typing import Any, Literal

# What a call is for. Used for cost accounting per role and by the offline scripted provider
# to pick its script.
Purpose = Literal["enrichment", "roster", "patient", "assistant", "judge"]
PURPOSES: tuple[str, ...] = ("enrichment", "roster", "patient", "assistant", "judge")

# The faults a call is asked again after, in the order pages list them. A call's retries are
# counted by kind ({"rate_limit": 2, "server": 1}) on its ChatResponse, or on the
# ProviderError it finally raised.
RETRY_KINDS: tuple[str, ...] = ("rate_limit", "server", "timeout", "connection", "malformed")
RETRY_LABELS = {
    "rate_limit": "rate limit",
    "server": "server error",
    "timeout": "timeout",
    "connection": "connection",
    "malformed": "malformed reply",
}


def body_json(value: Any) -> str:
    """JSON text as the OpenAI client encodes a request body (openai._utils._json): compact,
    UTF-8 kept, no NaN. Plain JSON values only (its encoder also takes dates and models)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the agent sees it: a name, a description and a JSON schema for arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @cached_property
    def openai_json(self) -> str:
        """to_openai() as the OpenAI client encodes it in a request body (body_json), encoded
        once per spec: an agent's every call sends the same tools (specs are never changed)."""
        return body_json(self.to_openai())

    def to_openai_responses(self) -> dict[str, Any]:
        # strict: false - the sandbox's schemas leave optional fields out, which strict mode
        # forbids.
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": False,
        }

    def to_anthropic(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters,
        }


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model emitted it.

    `arguments` is the raw JSON text: models sometimes emit malformed JSON, and the loop turns
    that into a tool error the model can see instead of a crash.
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # set on role="tool"
    tool_name: str | None = None  # set on role="tool"
    # The provider's own record of the reasoning behind an assistant turn that called tools
    # (ChatResponse.reasoning_blocks), sent back with it unchanged where the provider requires
    # it. Never shown to the patient or the judges.
    reasoning_blocks: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    model: str  # full model string, e.g. "openai/gpt-5.5" or "offline/careful"
    purpose: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    # Nucleus sampling: None leaves the provider's default (sent only when set).
    top_p: float | None = None
    # Reasoning settings from the model string (llm.engine.generation.apply), each sent only
    # when set: OpenAI's reasoning_effort, Claude's thinking budget in tokens, and the thinking
    # switch of Qwen3's chat template on vLLM.
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    thinking_switch: bool | None = None
    # The JSON schema of the object a structured call asks for (llm.engine.structured): sent
    # as the provider's structured output where the model's family takes it, else left to the
    # prompt (generation.apply clears it). The answer is validated and repaired either way.
    json_schema: dict[str, Any] | None = None
    # Structured copies of facts already present in the prompt, for the offline scripted
    # provider only. Never sent to a real model and never allowed to carry model identity.
    hints: dict[str, Any] = field(default_factory=dict)
    # Which independent draw from the model this call belongs to: a conversation's seed (so a
    # repetition), a judge slot, an entry. Never sent to the model; part of the response-cache
    # key, so two samples never share a cached answer while a replay of one sample does.
    sample: str = ""
    # The provider's sampling seed (llm.engine.seeds): derived from `sample` and `purpose` by
    # generation.apply for the families that take one, sent by the chat completions adapters
    # only (OpenAI and OpenAI-compatible servers; the Responses API and Anthropic take none).
    seed: int | None = None
    # How many leading characters of the first user message stay the same from call to call
    # (a judge's instructions and rubric before the conversation it scores): Anthropic's
    # adapter marks them as a prompt-cache prefix. 0 marks nothing; the system prompt and the
    # tool list are marked always. OpenAI caches repeated prefixes by itself. Never part of
    # the response-cache key: it changes the price of a call, not its answer.
    cache_prefix_chars: int = 0
    # How many leading characters of the first user message are the same for every call about
    # the same case (a judge's rubric, then the patient's profile and scenario, before the
    # trace): the conversations of every agent a case was played with share them, so
    # Anthropic's adapter marks a second breakpoint there (OpenAI again caches by itself).
    # 0, or not past cache_prefix_chars, marks nothing more. Never part of the cache key.
    cache_case_chars: int = 0
    # The call is one turn of a conversation that will be sent again with more turns (the
    # agent's and the patient's): Anthropic's adapter also marks its latest message, so the
    # next turn reads everything up to it from the cache instead of paying for it again. Off
    # for one-off calls (a judge, enrichment), whose tail would be written at 1.25x and never
    # read. Never part of the response-cache key, like cache_prefix_chars.
    cache_latest: bool = False


# A refusal that came with no words of its own (Claude can stop with stop_reason "refusal" before
# writing anything): what the trace and error messages say instead.
REFUSED_WITHOUT_TEXT = "(the model refused without a word)"


@dataclass(frozen=True)
class Usage:
    """Tokens of one call. `input_tokens` counts ALL the prompt's tokens, however they were
    billed; `cached_input_tokens` (read from the provider's prompt cache: OpenAI's
    cached_tokens, Anthropic's cache_read_input_tokens) and `cache_write_tokens` (put into it:
    Anthropic's cache_creation_input_tokens) are parts of it, priced apart (catalog.Price)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """The input billed at the plain input price: neither read from nor written to a cache."""
        return max(0, self.input_tokens - self.cached_input_tokens - self.cache_write_tokens)


@dataclass(frozen=True)
class ChatResponse:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""  # thinking blocks: kept in the trace, never shown to the patient
    # The reasoning as the provider must get it back with this turn if it called tools:
    # Anthropic thinking and redacted_thinking blocks with their signatures, or the
    # reasoning field (reasoning_content, reasoning) of an OpenAI-compatible server such as
    # vLLM serving GPT-OSS or Qwen3. Opaque: a provider adapter writes and reads its own kinds.
    reasoning_blocks: tuple[dict[str, Any], ...] = ()
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    finish_reason: str = "stop"
    model: str = ""
    # The model declined to answer: OpenAI's `refusal` text, or what Claude wrote before it
    # stopped with stop_reason "refusal" (REFUSED_WITHOUT_TEXT when it wrote nothing). Empty
    # when the model did not refuse.
    refusal: str = ""
    cost_usd: Decimal | None = None  # None means the price is unknown, never "free"
    # What the call would have cost with no prompt caching (every input token at the input
    # price); cost_usd is what it was billed. None when the price is unknown.
    list_cost_usd: Decimal | None = None
    cached: bool = False
    # Faults asked again before this answer came, by kind (see RETRY_KINDS); a cached answer
    # made none.
    retries: dict[str, int] = field(default_factory=dict)
    # The seed sent with the call (None when the provider took none) and the provider's name
    # for the backend that answered (OpenAI's system_fingerprint; "" when it gave none): the
    # same seed promises the same answer only while the fingerprint stays the same.
    seed: int | None = None
    fingerprint: str = ""
    # The accounting key this answer was already paid under ("" for most): a batch answer read
    # back by a replay of its unit's live code (jobs.services.replay_batches), whose
    # accounting row then is the paid one instead of a second, free row.
    accounted_as: str = ""

    @property
    def refusal_words(self) -> str:
        """What the model said in refusing; "" when it said nothing (or did not refuse)."""
        return "" if self.refusal == REFUSED_WITHOUT_TEXT else self.refusal


class ProviderError(Exception):
    """A model call that failed after the client gave up (or could never succeed).

    kind is one of: rate_limit, server, timeout, connection, bad_request, auth,
    context_overflow, malformed, config.
    """

    # A malformed body is a server fault like a 500 (a proxy cut the reply, a gateway answered
    # with HTML): asking again usually works.
    RETRYABLE_KINDS = frozenset(RETRY_KINDS)

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status
        # Faults asked again before the client gave up, by kind (set by call_with_retries).
        self.retries: dict[str, int] = {}

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE_KINDS
