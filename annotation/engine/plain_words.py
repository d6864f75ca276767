"""Codes as plain words for the pages annotators read (annotation/data/plain_words.yaml).

A clinician reads `young_adult`, `under_renewal` or `get_available_appointments` as noise. Every
code an annotator sees (case attributes, medication statuses, tool names, the fields of the
patient record and of tool calls and results) goes through `plain` or `field_name`, which use
the data file's words where it has them and otherwise turn the code's underscores into spaces
word by word. `readable` lays a JSON value (a tool's arguments or result, the record) out as
nested lists and tables with plain field names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from common.safe_yaml import safe_load

PLAIN_WORDS_FILE = Path(__file__).resolve().parent.parent / "data" / "plain_words.yaml"
SECTIONS = ("codes", "fields", "words")
# A code: lower-case words joined by underscores (one word alone is a word, not a code).
CODE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")


@dataclass(frozen=True)
class PlainWords:
    codes: dict[str, str]
    fields: dict[str, str]
    words: dict[str, str]

    def plain(self, code: str) -> str:
        return self.codes.get(code) or self._words(code)

    def field_name(self, name: str) -> str:
        return self.fields.get(name) or self._words(name)

    def _words(self, code: str) -> str:
        return " ".join(self.words.get(word, word) for word in code.split("_") if word)


def load_plain_words(text: str, *, name: str = "plain_words.yaml") -> PlainWords:
    """Parse and check the file: three sections of code -> words, every entry non-empty."""
    data = safe_load(text) or {}
    if not isinstance(data, dict) or set(data) - set(SECTIONS):
        raise ValueError(f"{name}: the file holds the sections {', '.join(SECTIONS)} only")
    sections = {}
    for section in SECTIONS:
        entries = data.get(section) or {}
        bad = [
            str(key)
            for key, words in (entries.items() if isinstance(entries, dict) else [(section, 0)])
            if not isinstance(key, str) or not isinstance(words, str) or not words.strip()
        ]
        if bad:
            raise ValueError(f"{name}: {section} needs words for {', '.join(bad)}")
        sections[section] = {key: words.strip() for key, words in entries.items()}
    return PlainWords(**sections)


@lru_cache(maxsize=1)
def plain_words() -> PlainWords:
    return load_plain_words(PLAIN_WORDS_FILE.read_text(encoding="utf-8"))


def plain(code: Any) -> Any:
    """A code in plain words; anything that is not text comes back as it is."""
    if not isinstance(code, str) or not code:
        return code
    return plain_words().plain(code)


def field_name(name: str) -> str:
    return plain_words().field_name(name)


def value_words(value: Any) -> Any:
    """A value read in a record or a tool's answer: a code is put in words, other text (names,
    dates, ids such as slot-dr-02-0900, free text) is left exactly as it is."""
    if isinstance(value, str) and CODE.fullmatch(value):
        return plain(value)
    return value


# --- readable layout of a JSON value -------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """One value laid out for reading: `kind` is "text", "pairs" (field name, Node), "table"
    (columns, rows of texts: a list of records sharing their fields), or "items" (Nodes)."""

    kind: str
    text: str = ""
    pairs: tuple = ()
    columns: tuple = ()
    rows: tuple = ()
    items: tuple = ()


def readable(value: Any) -> Node:
    if isinstance(value, dict):
        return Node("pairs", pairs=tuple((field_name(k), readable(v)) for k, v in value.items()))
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return Node("text", text=", ".join(_text(v) for v in value) or "-")
        if _same_flat_records(value):
            keys = list(value[0])
            return Node(
                "table",
                columns=tuple(field_name(k) for k in keys),
                rows=tuple(tuple(_text(record.get(k)) for k in keys) for record in value),
            )
        return Node("items", items=tuple(readable(v) for v in value))
    return Node("text", text=_text(value))


def _same_flat_records(value: list) -> bool:
    """Records of the same fields holding no nested value: one row each in a table."""
    if not value or not all(isinstance(v, dict) and v for v in value):
        return False
    keys = list(value[0])
    return all(
        list(v) == keys and not any(isinstance(x, (dict, list)) for x in v.values()) for v in value
    )


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value_words(value))
