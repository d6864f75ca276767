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

from llm.engine.chat import ChatRequest, ChatResponse, Message


class ChatClient(Protocol):
    def chat(self, request: ChatRequest) -> ChatResponse: ...


def forget_answer(client: ChatClient, request: ChatRequest) -> None:
    """Ask `client` to drop its cached answer to `request`. Clients that cache have a
    `forget` method (ModelClient, ModelRouter and wrappers passing it on); the others, such as
    the bare offline provider, have nothing to forget."""
    forget = getattr(client, "forget", None)
    if forget is not None:
        forget(request)


class InvalidOutput(ValueError):
    """Raised by validators: the message says what is wrong, in words a model can act on."""


class UnusableJson(InvalidOutput):
    """The answer is not exactly one JSON object. `code` names why, for reports."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


# One decoder for every structured answer: a repeated key is an error, never "last one wins".
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
_VALUE_START = re.compile(r"[\[{]")
_OBJECT_START = re.compile(r'(?:\[\s*)?\{\s*"')


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the single JSON object in `text`.

    The rule: exactly one JSON object in the whole answer, with no repeated key. It may stand
    bare or inside a ``` fence, with prose around it. Anything else raises UnusableJson: no
    object, a second object anywhere (fenced or not), an object inside an array, a repeated
    key, truncated JSON.
    """
    if not (text or "").strip():
        raise UnusableJson("empty", "The answer was empty; reply with one JSON object.")
    objects, arrays, broken = json_values(text)
    if broken:
        raise UnusableJson(
            "malformed_json",
            "The answer held a JSON object that is cut off or malformed; reply with one "
            "complete JSON object.",
        )
    if arrays:
        raise UnusableJson(
            "json_array", "The answer held a JSON array; reply with one JSON object, not a list."
        )
    if not objects:
        raise UnusableJson(
            "no_json", "No complete JSON object was found; reply with one JSON object."
        )
    if len(objects) > 1:
        raise UnusableJson(
            "multiple_json", "The answer held more than one JSON object; reply with exactly one."
        )
    return objects[0]


def json_values(text: str) -> tuple[list[dict[str, Any]], list[list[Any]], int]:
    """Every complete top-level JSON object, every array holding an object, and the number of
    objects that start like JSON ('{"') but do not decode (cut off, malformed), in `text`.

    Scans left to right from each "{" or "["; a value that decodes is skipped whole, so the
    objects nested inside it are not counted again. Arrays of plain values ("[1, 2]" in prose)
    and braces in prose ("{name}") are ignored. A repeated key raises UnusableJson.
    """
    objects: list[dict[str, Any]] = []
    arrays: list[list[Any]] = []
    broken = 0
    match = _VALUE_START.search(text)
    while match:
        index = match.start()
        try:
            value, end = _DECODER.raw_decode(text, index)
        except _DuplicateKey as duplicate:
            raise UnusableJson(
                "duplicate_key",
                f'The JSON object repeats the key "{duplicate.key}"; give each key once.',
            ) from None
        except json.JSONDecodeError:
            broken += bool(_OBJECT_START.match(text, index))
            match = _VALUE_START.search(text, index + 1)
            continue
        if isinstance(value, dict):
            objects.append(value)
        elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
            arrays.append(value)
        match = _VALUE_START.search(text, end)
    return objects, arrays, broken


# The least a structured call asks of the provider: one JSON object.
ANY_OBJECT: dict[str, Any] = {"type": "object"}


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
    schema: dict[str, Any] = ANY_OBJECT,
) -> StructuredResult:
    """Call the model, parse one JSON object, validate it; on failure feed the error back.

    `validate` returns the (possibly normalised) data or raises InvalidOutput.
    ProviderError propagates untouched: a provider fault is not a malformed answer. A refusal
    fails at once, with the model's words, and is not repaired. With `schema` (the object's
    JSON schema) the request asks the provider to hold the answer to it, where the model's
    family takes structured output (generation.apply): by default any JSON object, which
    spares the repair turns of an answer in prose; a caller that knows its object's shape
    passes that. The answer is validated and repaired all the same, and a model without
    structured output is asked by the prompt alone.
    """
    responses: list[ChatResponse] = []
    current = json_request(request, schema)
    for attempt in range(max_repairs + 1):
        response = client.chat(current)
        responses.append(response)
        if response.refusal:
            # Asking again for the JSON would only be refused again, at the same price.
            forget_answer(client, current)
            raise StructuredFailure(f"the model refused: {response.refusal}", responses)
        try:
            return StructuredResult(validate(extract_json_object(response.text)), responses)
        except InvalidOutput as error:
            reason = str(error)
        # An answer that failed validation must never be replayed from the cache.
        forget_answer(client, current)
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


def json_request(request: ChatRequest, schema: dict[str, Any] = ANY_OBJECT) -> ChatRequest:
    """`request` asking for a JSON object of `schema`, as `request_json` sends it first (a batch
    sends this and validates the answer when it comes)."""
    return replace(request, json_schema=_sendable(schema))


def _sendable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as a provider takes it: without the `$schema` dialect tag, which the
    providers' structured outputs do not read."""
    return {key: value for key, value in schema.items() if key != "$schema"}
