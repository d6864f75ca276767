"""The reviewer's answer: {"findings": [{kind, event, quote, explanation}]}, validated against
the error kinds and the conversation's patient messages. An unusable answer is an
InvalidOutput, which structured.request_json feeds back to the reviewer for repair; it never
becomes "no findings"."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from llm.engine.structured import InvalidOutput

QUOTE_CHARS = 300
EXPLANATION_CHARS = 600

# The answer as a JSON schema, for providers that hold an answer to one; validated either way.
REVIEW_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string"},
                    "event": {"type": "string"},
                    "quote": {"type": "string"},
                    "explanation": {"type": "string"},
                },
                "required": ["kind", "event", "quote", "explanation"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["findings"],
    "additionalProperties": False,
}


def review_validator(
    *, kinds: Collection[str], patient_events: Collection[str]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A validator for request_json: the findings normalised (stripped, quotes and
    explanations cut to length, duplicates of one kind at one message dropped)."""

    def validate(data: dict[str, Any]) -> dict[str, Any]:
        findings = data.get("findings")
        if not isinstance(findings, list):
            raise InvalidOutput('The JSON object needs a "findings" list (empty when none).')
        kept: dict[tuple[str, str], dict[str, str]] = {}
        for position, finding in enumerate(findings, start=1):
            checked = _finding(finding, position, kinds, patient_events)
            kept.setdefault((checked["kind"], checked["event"]), checked)
        return {"findings": list(kept.values())}

    return validate


def _finding(
    finding: Any, position: int, kinds: Collection[str], patient_events: Collection[str]
) -> dict[str, str]:
    if not isinstance(finding, dict):
        raise InvalidOutput(f"Finding {position} is not a JSON object.")
    text = {key: finding.get(key) for key in ("kind", "event", "quote", "explanation")}
    missing = [
        key for key, value in text.items() if not isinstance(value, str) or not value.strip()
    ]
    if missing:
        raise InvalidOutput(f"Finding {position} lacks text in {', '.join(missing)}.")
    kind, event = text["kind"].strip(), text["event"].strip().strip("[]")
    if kind not in kinds:
        raise InvalidOutput(
            f"Finding {position} has the kind {kind!r}; use one of {', '.join(sorted(kinds))}."
        )
    if event not in patient_events:
        raise InvalidOutput(
            f"Finding {position} points at {event!r}, which is not the id of a patient message "
            "in the transcript."
        )
    return {
        "kind": kind,
        "event": event,
        "quote": text["quote"].strip()[:QUOTE_CHARS],
        "explanation": text["explanation"].strip()[:EXPLANATION_CHARS],
    }
