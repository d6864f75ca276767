"""Sandbox snapshots are stored compressed and read back exactly."""

import hashlib

import pytest
from django.db import connection

from benchmark.engine.sandbox import Sandbox
from benchmark.models import Conversation
from benchmark.services.conversations import conversation_execute


@pytest.mark.django_db
def test_a_stored_snapshot_reads_back_as_the_same_state_and_is_small(run):
    conversation = run.conversations.first()
    conversation_execute(conversation.pk)
    stored = Conversation.objects.get(pk=conversation.pk)
    assert Sandbox.from_json(stored.sandbox_final).state_hash() == stored.final_state_hash
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sandbox_initial FROM benchmark_conversation WHERE id = %s", [stored.pk]
        )
        raw = bytes(cursor.fetchone()[0])
    plain = len(repr(stored.sandbox_initial))
    assert len(raw) < plain / 4


@pytest.mark.django_db
def test_a_missing_snapshot_stays_missing(run):
    conversation = run.conversations.first()
    assert Conversation.objects.get(pk=conversation.pk).sandbox_initial is None


def test_a_snapshot_is_stored_as_its_state_would_be_and_later_calls_do_not_change_it():
    from benchmark.engine.sandbox.examples import EXAMPLE_NOW, EXAMPLE_PROFILE, EXAMPLE_ROSTER
    from benchmark.fields import CompressedJSONField

    sandbox = Sandbox.build(EXAMPLE_PROFILE, EXAMPLE_ROSTER, 7, EXAMPLE_NOW)
    field = CompressedJSONField()
    snapshot, state = sandbox.snapshot(), sandbox.to_json()
    # The same document (the snapshot's keys are sorted, so its hash is the state hash's).
    stored = field.get_db_prep_value(snapshot, connection)
    assert field.to_python(stored) == field.to_python(field.get_db_prep_value(state, connection))
    assert hashlib.sha256(snapshot.encode()).hexdigest() == sandbox.state_hash()
    sandbox.messages.append({"body": "written after the snapshot"})
    assert field.to_python(field.get_db_prep_value(snapshot, connection)) == state
