"""Ask a model for JSON that must pass a validator, repairing with bounded retries.

Used by enrichment, roster generation and the jury. The validation error is fed back to the
model so it can correct itself; after the last attempt the caller gets a StructuredFailure
with every raw answer, never a half-valid object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from benchmark.engine.chat import ChatRequest, ChatResponse, Message


class ChatClient(Protocol):
    def chat(self, request: ChatRequest) -> ChatResponse: ...


class InvalidOutput(ValueError):
    """Raised by validators: the message says what is wrong, in words a model can act on."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the single JSON object in `text`.

    Accepts a bare object or one inside a ``` fence. Prose around a single object is
    tolerated; two objects, arrays, truncated JSON or no object at all raise InvalidOutput.
    """
    stripped = (text or "").strip()
    if not stripped:
        raise InvalidOutput("The answer was empty; reply with one JSON object.")
    fenced = _FENCE.findall(stripped)
    candidates = fenced if fenced else [stripped]
    objects = []
    for candidate in candidates:
        objects.extend(json_objects(candidate))
    if not objects:
        raise InvalidOutput("No complete JSON object was found; reply with one JSON object.")
    if len(objects) > 1:
        raise InvalidOutput("The answer held more than one JSON object; reply with exactly one.")
    return objects[0]


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every complete JSON object embedded in `text`, in order."""
    decoder = json.JSONDecoder()
    found = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        index = text.find("{", end)
    return found


@dataclass
class StructuredResult:
    data: dict[str, Any]
    responses: list[ChatResponse]


class StructuredFailure(Exception):
    def __init__(self, reason: str, responses: list[ChatResponse]):
        super().__init__(reason)
        self.reason = reason
        self.responses = responses


def request_json(
    client: ChatClient,
    request: ChatRequest,
    validate: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    max_repairs: int = 2,
) -> StructuredResult:
    """Call the model, parse one JSON object, validate it; on failure feed the error back.

    `validate` returns the (possibly normalised) data or raises InvalidOutput.
    ProviderError propagates untouched: a provider fault is not a malformed answer.
    """
    responses: list[ChatResponse] = []
    current = request
    for attempt in range(max_repairs + 1):
        response = client.chat(current)
        responses.append(response)
        try:
            return StructuredResult(validate(extract_json_object(response.text)), responses)
        except InvalidOutput as error:
            reason = str(error)
        if attempt < max_repairs:
            current = _with_repair_turn(current, response.text, reason, attempt + 1)
    raise StructuredFailure(f"invalid after {max_repairs + 1} attempts: {reason}", responses)


def _with_repair_turn(request: ChatRequest, answer: str, reason: str, repair: int) -> ChatRequest:
    feedback = (
        "Your previous answer could not be used: "
        f"{reason}\nReply again with only the corrected JSON object."
    )
    messages = request.messages + (
        Message(role="assistant", content=answer or "(empty)"),
        Message(role="user", content=feedback),
    )
    return replace(request, messages=messages, hints={**request.hints, "repair": repair})
