"""What the judges of one conversation read, loaded and rendered once per process.

A conversation is judged a dozen times (rubrics x judges), and each call used to read the
trace again and render it again. `judge_inputs` keeps the last conversations' profile,
scenario, trace and rendered text in a small per-process cache, keyed by the conversation's
key, public id, attempt and finish time: a conversation played again (a new attempt) or a new
row that reuses a key (a test database rolled back) is never served from the cache.

Everything here comes from the entry and the trace: nothing that names the model or the agent
configuration under evaluation (blinding).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from benchmark.models import BenchmarkEntry, Conversation
from jury.engine.prompt import ConversationText, render_conversation

TRACE_FIELDS = ("event_id", "turn", "kind", "content", "tool_name", "arguments", "ok")
# Conversations whose inputs a process keeps: judge calls go out in conversation order, so
# the ones in flight at once are a few dozen at most.
CACHED_CONVERSATIONS = 128
ENTRY_FIELDS = (
    "profile",
    "story",
    "task_category",
    "task_subcategory",
    "complexity",
    "seed",
    "care_preference",
)


@dataclass(frozen=True)
class JudgeInputs:
    profile: dict
    scenario: dict
    events: tuple[dict, ...]
    text: ConversationText
    # For the outcome checks once the conversation is merged (jury.engine.outcomes).
    write_actions: list
    care_preference: str


def scenario_of(entry: BenchmarkEntry) -> dict:
    """Ground truth the assistant never saw: the story, the task and every seed attribute."""
    return {
        "story": entry.story,
        "task_category": entry.task_category,
        "task_subcategory": entry.task_subcategory,
        "complexity": entry.complexity,
        "seed_attributes": entry.seed,
    }


def trace_of(conversation: Conversation) -> list[dict]:
    """The trace as plain dicts with content fields only: no model role, tokens or costs."""
    return list(conversation.events.order_by("seq").values(*TRACE_FIELDS))


def judge_inputs(conversation: Conversation) -> JudgeInputs:
    """The conversation's judge inputs (two queries the first time in this process)."""
    key = (conversation.pk, conversation.public_id, conversation.attempts, conversation.finished_at)
    return _cache.get(key, lambda: _load(conversation.pk))


def _load(conversation_id: int) -> JudgeInputs:
    conversation = (
        Conversation.objects.select_related("entry")
        .only("write_actions", "entry", *(f"entry__{name}" for name in ENTRY_FIELDS))
        .get(pk=conversation_id)
    )
    entry = conversation.entry
    profile, scenario = entry.profile, scenario_of(entry)
    events = tuple(trace_of(conversation))
    return JudgeInputs(
        profile=profile,
        scenario=scenario,
        events=events,
        text=render_conversation(profile=profile, scenario=scenario, events=events),
        write_actions=conversation.write_actions,
        care_preference=entry.care_preference,
    )


class _LeastRecentlyUsed:
    """A thread-safe cache of the last `size` values. A conversation's judge calls start
    together, so one thread builds a missing value while the others asking for it wait."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, JudgeInputs] = OrderedDict()
        self._building: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], JudgeInputs]) -> JudgeInputs:
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            built = self._building.get(key)
            mine = built is None
            if mine:
                built = self._building[key] = threading.Event()
        if not mine:
            built.wait()
            with self._lock:
                if key in self._values:
                    return self._values[key]
            return build()  # the thread that built it failed: try here
        try:
            value = build()
            with self._lock:
                self._values[key] = value
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._building[key]
            built.set()

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


_cache = _LeastRecentlyUsed(CACHED_CONVERSATIONS)
judge_inputs.cache_clear = _cache.clear  # tests that edit a stored trace in place
