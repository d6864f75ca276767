"""What one conversation asks of the database (issue 34: conversation CPU per model call).

Every answered call is one INSERT of its accounting row as it arrives (a killed worker has
still accounted for it); around them the conversation costs a fixed handful of statements -
the claim, its rows, the cancel check, the outcome in one guarded UPDATE and its trace in one
multi-row INSERT - however many turns it plays."""

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import ConversationStatus, ModelCall
from benchmark.services.conversations import conversation_execute

pytestmark = pytest.mark.django_db

# The claim, the conversation with its run, agent and case, the price list, the cancel check,
# the case's roster row (looked for, claimed and written by the conversation that writes it;
# read by the others), the outcome and the trace (9 today), never a number that grows with
# the turns.
FIXED_STATEMENTS = 10


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Every call asks the model: an earlier test's answers in the response cache would be
    accounted without an INSERT of their own as they arrive."""
    caches["llm"].clear()


def _statements(run) -> tuple[list[str], int]:
    conversation = run.conversations.order_by("pk").first()
    with CaptureQueriesContext(connection) as captured:
        assert conversation_execute(conversation.pk)
    calls = ModelCall.objects.filter(conversation=conversation).count()
    # Inside the test's transaction each answer's INSERT gets a savepoint of its own; outside
    # one (a worker) it commits alone.
    statements = [query["sql"] for query in captured if "SAVEPOINT" not in query["sql"]]
    return statements, calls


def test_each_answer_is_one_insert_and_the_rest_does_not_grow_with_the_turns(run):
    statements, calls = _statements(run)
    inserts = [sql for sql in statements if sql.startswith('INSERT INTO "benchmark_modelcall"')]
    assert calls > 4 and len(inserts) == calls
    others = [sql for sql in statements if sql not in inserts]
    assert len(others) <= FIXED_STATEMENTS, others


def test_the_outcome_is_one_guarded_update_and_the_trace_one_statement(run):
    statements, _ = _statements(run)
    outcome = [sql for sql in statements if sql.startswith('UPDATE "benchmark_conversation"')]
    trace = [
        sql
        for sql in statements
        if sql.startswith(('INSERT INTO "benchmark_traceevent"', 'COPY "benchmark_traceevent"'))
    ]
    assert len(trace) == 1  # a COPY on PostgreSQL (common.inserts), an INSERT elsewhere
    # The claim and the outcome; the outcome's UPDATE checks the attempt still owns the row.
    assert len(outcome) == 2 and '"attempts" = ' in outcome[1]
    assert not any("FOR UPDATE" in sql for sql in statements)
    # A first attempt has no earlier trace to clear.
    assert not any(sql.startswith('DELETE FROM "benchmark_traceevent"') for sql in statements)
    conversation = run.conversations.order_by("pk").first()
    assert conversation.status == ConversationStatus.FINISHED
    assert conversation.events.count() > 4
