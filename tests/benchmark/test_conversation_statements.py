"""What one conversation asks of the database (issue 34: conversation CPU per model call).

Every answered call is one INSERT of its accounting row as it arrives (a killed worker has
still accounted for it); around them the conversation costs a fixed handful of statements -
the claim, its rows, the cancel check, the outcome in one guarded UPDATE and its trace in one
multi-row INSERT - however many turns it plays."""

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import Conversation, ConversationStatus, ModelCall
from benchmark.services.conversations import conversation_execute
from llm.services import prices

pytestmark = pytest.mark.django_db

# The claim, the conversation with its run, agent, case and the prices' stamp, the case's
# roster row (looked for, claimed and written by the conversation that writes it; read by the
# others), the outcome and the trace, never a number that grows with the turns.
FIXED_STATEMENTS = 7


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Every call asks the model: an earlier test's answers in the response cache would be
    accounted without an INSERT of their own as they arrive."""
    caches["llm"].clear()


def _statements(run) -> tuple[list[str], int]:
    conversation = run.conversations.order_by("pk").first()
    # A worker reads the prices once while they stay as they are (their stamp comes with each
    # conversation's row): as after its first conversation.
    stamp = Conversation.objects.annotate(stamp=prices.prices_stamp()).values("stamp")
    prices.price_overrides_as_of(stamp.get(pk=conversation.pk)["stamp"])
    with CaptureQueriesContext(connection) as captured:
        assert conversation_execute(conversation.pk)
    calls = ModelCall.objects.filter(conversation=conversation).count()
    # Inside the test's transaction each answer's INSERT gets a savepoint of its own; outside
    # one (a worker) it commits alone.
    statements = [query["sql"] for query in captured if "SAVEPOINT" not in query["sql"]]
    return statements, calls


def _cancel_check(sql: str) -> bool:
    return sql.startswith('SELECT "benchmark_run"."status"')


def test_each_answer_is_one_insert_and_the_rest_does_not_grow_with_the_turns(run):
    statements, calls = _statements(run)
    inserts = [sql for sql in statements if sql.startswith('INSERT INTO "benchmark_modelcall"')]
    assert calls > 4 and len(inserts) == calls
    # The run's status, asked at most every CANCEL_CHECK_SECONDS: how many depends on the time
    # a conversation takes, not on what it does.
    others = [sql for sql in statements if sql not in inserts and not _cancel_check(sql)]
    assert len(others) <= FIXED_STATEMENTS, others
    # The prices come with the conversation's own row, never in a query of their own.
    price_reads = [sql for sql in others if '"benchmark_modelprice"' in sql]
    assert price_reads and all(
        sql.startswith('SELECT "benchmark_conversation"') for sql in price_reads
    )


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
