"""common.updates.rows_update stores what the ORM's bulk_update would (text, JSON, decimals,
booleans, nulls, times), each row its own values, and nothing else, in as few statements as
the parameter limit allows."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import Conversation, TraceEvent
from common import updates

pytestmark = pytest.mark.django_db

CHANGED = ("kind", "content", "arguments", "ok", "cost_usd", "latency_ms", "turn", "cached")
AWKWARD = ["tab\there", "line\nbreak", "back\\slash", "\\N", "", 'l\'œil "q" 🙂']


def _events(conversation, count: int) -> list[TraceEvent]:
    rows = [
        TraceEvent(conversation=conversation, seq=seq, event_id=f"e{seq}", turn=1, kind="patient")
        for seq in range(count)
    ]
    TraceEvent.objects.bulk_create(rows)
    return list(conversation.events.order_by("seq"))


def _change(rows: list[TraceEvent]) -> None:
    for seq, row in enumerate(rows):
        row.kind = "tool_call" if seq % 2 else "assistant"
        row.content = AWKWARD[seq % len(AWKWARD)]
        row.arguments = None if seq % 3 == 0 else {"text": row.content, "n": [seq, None]}
        row.ok = None if seq % 4 == 0 else seq % 2 == 0
        row.cost_usd = None if seq % 5 == 0 else Decimal(seq) / Decimal("1000000")
        row.latency_ms = seq * 1.5
        row.turn = seq % 7 + 1
        row.cached = seq % 2 == 1


def test_rows_read_back_as_the_orms_bulk_update(run):
    ours, theirs = run.conversations.order_by("pk")[:2]
    mine, orms = _events(ours, 12), _events(theirs, 12)
    _change(mine)
    _change(orms)

    updates.rows_update(mine, CHANGED)
    TraceEvent.objects.bulk_update(orms, CHANGED)

    def stored(conversation):
        return list(conversation.events.order_by("seq").values_list("seq", *CHANGED))

    assert stored(ours) == stored(theirs)
    assert stored(ours)[3][2] == AWKWARD[3]  # the rows were changed at all


def test_only_the_named_fields_of_the_given_rows_change(run):
    conversation = run.conversations.first()
    rows = _events(conversation, 4)
    for row in rows:
        row.content, row.tool_name = "new", "not stored"

    updates.rows_update(rows[:2], ["content"])

    stored = list(conversation.events.order_by("seq").values_list("content", "tool_name"))
    assert stored == [("new", ""), ("new", ""), ("", ""), ("", "")]


def test_times_big_numbers_and_json_lists_are_stored(run):
    conversations = list(run.conversations.order_by("pk")[:3])
    when = datetime(2026, 12, 5, 4, 30, tzinfo=UTC)
    for n, conversation in enumerate(conversations):
        conversation.write_actions = [{"tool": f"book {n}", "ids": [n]}]
        conversation.clock = None if n == 0 else when
        conversation.seed = 2**62 + n
        conversation.usage = {"calls": n}

    updates.rows_update(conversations, ["write_actions", "clock", "seed", "usage"])

    stored = Conversation.objects.filter(pk__in=[c.pk for c in conversations]).order_by("pk")
    assert [(c.write_actions, c.clock, c.seed, c.usage) for c in stored] == [
        ([{"tool": f"book {n}", "ids": [n]}], None if n == 0 else when, 2**62 + n, {"calls": n})
        for n in range(3)
    ]


def test_many_rows_take_a_few_statements(run):
    conversation = run.conversations.first()
    rows = _events(conversation, 700)
    _change(rows)
    per_statement = min(
        updates.ROWS_PER_STATEMENT,
        (connection.features.max_query_params or 65_535) // (1 + len(CHANGED)),
    )

    with CaptureQueriesContext(connection) as captured:
        updates.rows_update(rows, CHANGED)

    assert len(captured) == -(-700 // per_statement)
    stored = conversation.events.order_by("seq").values_list("content", flat=True)
    assert list(stored) == [AWKWARD[seq % len(AWKWARD)] for seq in range(700)]
