"""Turning what a model sent as tool arguments into clean values, or a clear ToolError.

Arguments are checked against the tool's own JSON schema (specs.py), so the schema the agent
sees and the rules the sandbox applies cannot drift apart. Only the schema features the specs
use are understood: string, array of strings, object of strings, enum, required.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

MAX_STRING_LENGTH = 2_000
MAX_RAW_ARGUMENTS_LENGTH = 20_000
MAX_LIST_ITEMS = 20

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CLOCK_TIME = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$")
# Parts of the day as [start, end) in "HH:MM".
DAY_PARTS = {
    "morning": ("00:00", "12:00"),
    "afternoon": ("12:00", "17:00"),
    "evening": ("17:00", "24:00"),
}


class ToolError(Exception):
    """A tool call the sandbox refuses; the message is shown to the agent as is."""

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.message = message
        self.details = details

    def to_content(self) -> dict[str, Any]:
        return {"error": self.message, **self.details}


def parse_arguments(schema: dict[str, Any], raw: Any) -> dict[str, Any]:
    """Clean arguments with omitted optional ones left out; raises ToolError."""
    arguments = _decode(raw)
    properties = schema.get("properties", {})
    _reject_unknown(arguments, properties, "")
    parsed = {}
    for name, rules in properties.items():
        value = _clean(name, arguments.get(name), rules)
        if value is not None:
            parsed[name] = value
        elif name in schema.get("required", ()):
            raise ToolError(f"The argument '{name}' is required and must not be empty.")
    return parsed


def _decode(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str):
        if len(raw) > MAX_RAW_ARGUMENTS_LENGTH:
            raise ToolError(
                f"The arguments are {len(raw)} characters long; the limit is "
                f"{MAX_RAW_ARGUMENTS_LENGTH}."
            )
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError) as error:
            raise ToolError(f"The arguments are not valid JSON ({error}).") from None
    if not isinstance(raw, dict):
        raise ToolError("The arguments must be a JSON object mapping argument names to values.")
    return raw


def _reject_unknown(arguments: dict[str, Any], properties: dict[str, Any], prefix: str) -> None:
    unknown = [str(key) for key in arguments if key not in properties]
    if unknown:
        raise ToolError(
            f"Unknown argument(s): {', '.join(prefix + key for key in unknown)[:300]}. "
            f"Accepted: {', '.join(prefix + key for key in properties) or 'none'}."
        )


def _clean(name: str, value: Any, rules: dict[str, Any]) -> Any:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    kind = rules["type"]
    if kind == "string":
        return _clean_string(name, value, rules.get("enum"))
    if kind == "array":
        return _clean_list(name, value)
    return _clean_object(name, value, rules["properties"])


def _clean_string(name: str, value: Any, allowed: list[str] | None) -> str:
    if not isinstance(value, str):
        raise ToolError(f"The argument '{name}' must be a string, not {_json_type(value)}.")
    if len(value) > MAX_STRING_LENGTH:
        raise ToolError(
            f"The argument '{name}' is {len(value)} characters long; the limit is "
            f"{MAX_STRING_LENGTH}."
        )
    text = value.strip()
    if allowed is None:
        return text
    if text.lower() not in allowed:
        raise ToolError(f"The argument '{name}' must be one of: {', '.join(allowed)}.")
    return text.lower()


def _clean_list(name: str, value: Any) -> list[str] | None:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > MAX_LIST_ITEMS:
        raise ToolError(
            f"The argument '{name}' must be a list of at most {MAX_LIST_ITEMS} strings."
        )
    cleaned = [_clean_string(f"{name}[{index}]", item, None) for index, item in enumerate(items)]
    return [item for item in cleaned if item] or None


def _clean_object(name: str, value: Any, properties: dict[str, Any]) -> dict[str, str] | None:
    if not isinstance(value, dict):
        raise ToolError(f"The argument '{name}' must be an object, not {_json_type(value)}.")
    _reject_unknown(value, properties, f"{name}.")
    cleaned = {
        key: _clean(f"{name}.{key}", value.get(key), rules) for key, rules in properties.items()
    }
    return {key: item for key, item in cleaned.items() if item is not None} or None


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a string" if isinstance(value, str) else "null"


def parse_date(name: str, text: str, window: tuple[date, date]) -> date:
    """A YYYY-MM-DD date inside the booking window, or a ToolError saying what is wrong."""
    try:
        if not _ISO_DATE.match(text):
            raise ValueError
        day = date.fromisoformat(text)
    except ValueError:
        raise ToolError(f"'{name}' must be a date written YYYY-MM-DD, got {text[:40]!r}.") from None
    first, last = window
    if not first <= day <= last:
        raise ToolError(
            f"'{name}' {day.isoformat()} is outside the booking window, which runs from "
            f"{first.isoformat()} (today) to {last.isoformat()}."
        )
    return day


def parse_time_preference(text: str) -> tuple[str, str]:
    """A preferred time as a [start, end) range of "HH:MM"; a clock time is a zero-width range."""
    key = text.strip().lower()
    if key in DAY_PARTS:
        return DAY_PARTS[key]
    match = _CLOCK_TIME.match(key)
    hour, minute = (int(match[1]), int(match[2] or 0)) if match else (-1, -1)
    suffix = match[3] if match else None
    if suffix and 1 <= hour <= 12:
        hour = hour % 12 + (12 if suffix.startswith("p") else 0)
    elif suffix:
        hour = -1
    if not (0 <= hour <= 23 and 0 <= minute <= 59):
        raise ToolError(
            "'preferred_time' must be a clock time such as 09:30 or 2:30 pm, or one of "
            f"{', '.join(DAY_PARTS)}; got {text[:40]!r}."
        )
    clock = f"{hour:02d}:{minute:02d}"
    return clock, clock
