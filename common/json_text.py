"""JSON from outside (an upload, an archive, an API body) read with a bound on nesting.

Python's parser recurses once per level of objects and arrays: `'{"a":' * 50000` exhausts the
stack (RecursionError: a server error, or a job failed as "unexpected"), and data nested a few
hundred levels still breaks the code that walks it afterwards. Every reader of JSON a person
sends calls `loads` here, which refuses anything nested deeper than MAX_DEPTH levels before
parsing. The refusal is a json.JSONDecodeError, so each caller's own words for bad JSON (the
line, the member, the API's 400) cover it too. Pure: no Django.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# Far more than any real record needs (a conversation line with structured tool arguments
# nests about a dozen), far less than the interpreter's stack.
MAX_DEPTH = 64

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)  # its brackets do not count
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TOKEN = re.compile(f"{_STRING.pattern}|[\\[\\]{{}}]", re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(json.JSONDecodeError):
    """Objects and arrays nested deeper than MAX_DEPTH; `lineno` and `colno` say where."""


def loads(text: str) -> Any:
    """json.loads, refusing nesting deeper than MAX_DEPTH (TooDeep) before parsing."""
    nesting_check(text)
    return json.loads(text)


def nesting_check(text: str) -> None:
    # Most texts (an archive's rows, a conversation line) hold too few brackets to nest deep:
    # counting them costs next to nothing, and only the rest is scanned.
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > MAX_DEPTH:
        raise TooDeep(
            f"objects and arrays nested more than {MAX_DEPTH} levels deep",
            text,
            _first_too_deep(text),
        )


def _first_too_deep(text: str) -> int:
    """Where the first bracket past MAX_DEPTH stands (for the line and column of the refusal)."""
    depth = 0
    for token in _TOKEN.finditer(text):
        depth += _STEP.get(text[token.start()], 0)
        if depth > MAX_DEPTH:
            return token.start()
    raise AssertionError("nesting_check found a depth this scan does not")
