"""Marks that apps above the benchmark put on a conversation's trace (the fidelity reviewer's
findings on the patient's messages), through a registry they fill in their `ready()`: the
benchmark imports none of them. Shown on the staff conversation page only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmark.models import Conversation


@dataclass(frozen=True)
class TraceMark:
    label: str  # what kind of mark, shown as a badge
    text: str  # why
    source: str  # who made it (a review's name), with `link` to it
    link: str = ""


MarkSource = Callable[[Conversation], dict[str, list[TraceMark]]]
_SOURCES: list[MarkSource] = []


def marks_register(source: MarkSource) -> None:
    """`source(conversation)` gives {event_id: [TraceMark]} for the events it marks."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def trace_marks(conversation: Conversation) -> dict[str, list[TraceMark]]:
    marks: dict[str, list[TraceMark]] = {}
    for source in _SOURCES:
        for event_id, found in source(conversation).items():
            marks.setdefault(event_id, []).extend(found)
    return marks
