"""common.inserts.rows_insert writes what the ORM would (defaults, auto_now_add, JSON,
decimals, nulls), in as few statements as the parameter limit allows."""

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import ModelCall, TraceEvent
from common import inserts

pytestmark = pytest.mark.django_db

COMPARED = ("event_id", "seq", "turn", "kind", "content", "arguments", "ok", "cost_usd", "cached")


def _event(conversation, seq: int, **fields) -> TraceEvent:
    return TraceEvent(conversation=conversation, seq=seq, event_id=f"e{seq}", turn=1, **fields)


def test_rows_read_back_as_the_orms_own(run):
    ours, theirs = run.conversations.order_by("pk")[:2]
    fields = {"kind": "tool_call", "arguments": {"when": "Tuesday", "ids": [1, 2]},
              "ok": None, "cost_usd": Decimal("0.001250"), "content": "l'œil"}  # fmt: skip
    inserts.rows_insert([_event(ours, 0, **fields), _event(ours, 1, kind="patient")])
    TraceEvent.objects.bulk_create([_event(theirs, 0, **fields), _event(theirs, 1, kind="patient")])
    assert list(ours.events.values_list(*COMPARED)) == list(theirs.events.values_list(*COMPARED))


def test_an_accounting_row_gets_its_defaults_and_creation_time(run):
    conversation = run.conversations.first()
    inserts.rows_insert([ModelCall(run=run, conversation=conversation, purpose="patient",
                                   model="offline/patient", answer_key="k1")])  # fmt: skip
    row = ModelCall.objects.get(answer_key="k1")
    assert (row.input_tokens, row.cost_usd, row.cached, row.fingerprint) == (0, None, False, "")
    assert row.created_at is not None and row.conversation == conversation


def test_awkward_values_read_back_as_the_orms_own(run):
    # On PostgreSQL several rows go in one COPY, whose text format escapes tabs, newlines,
    # backslashes and the null marker: each must come back as the ORM's INSERT stored it.
    ours, theirs = run.conversations.order_by("pk")[:2]
    awkward = ["tab\there", "line\nbreak\r", "back\\slash", "\\N", "", 'l\'œil "q" 🙂']

    def rows(conversation):
        last = _event(conversation, len(awkward), kind="patient", arguments=None, ok=None)
        return [
            _event(conversation, seq, kind="tool_call", content=text, ok=seq % 2 == 0,
                   arguments={"text": text, "n": [seq, None]}, cost_usd=Decimal("0.000001"))
            for seq, text in enumerate(awkward)
        ] + [last]  # fmt: skip

    inserts.rows_insert(rows(ours))
    TraceEvent.objects.bulk_create(rows(theirs))
    assert list(ours.events.order_by("seq").values_list(*COMPARED)) == list(
        theirs.events.order_by("seq").values_list(*COMPARED)
    )


def test_many_rows_are_one_statement_on_postgresql_and_split_at_the_limit_elsewhere(
    run, monkeypatch
):
    conversation = run.conversations.first()
    monkeypatch.setattr(connection.ops, "bulk_batch_size", lambda fields, objs: 2)
    with CaptureQueriesContext(connection) as captured:
        inserts.rows_insert([_event(conversation, seq, kind="patient") for seq in range(5)])
    statements = [query["sql"].split()[0] for query in captured]
    assert statements == (["COPY"] if connection.vendor == "postgresql" else ["INSERT"] * 3)
    assert list(conversation.events.values_list("seq", flat=True)) == [0, 1, 2, 3, 4]


def test_no_rows_no_statement():
    with CaptureQueriesContext(connection) as captured:
        inserts.rows_insert([])
    assert len(captured) == 0
