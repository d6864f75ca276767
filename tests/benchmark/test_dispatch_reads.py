"""Run and enrichment dispatches read only the rows they are about: their cost stays the same
from the first unit of work to the last (every finished unit dispatches)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmark.models import BenchmarkEntry, Conversation, ConversationStatus, EntryStatus
from benchmark.services import cases, runs
from tests.benchmark.conftest import enrich_all, launch, make_set
from tests.support.query_plans import index_range_problem, selects_of

pytestmark = pytest.mark.django_db


def captured(dispatch) -> CaptureQueriesContext:
    with CaptureQueriesContext(connection) as queries:
        dispatch()
    return queries


@pytest.fixture
def run_under_way(distribution, baseline):
    """Six conversations: the first finished, the second in flight, four pending."""
    run = launch(enrich_all(make_set(distribution)), baseline, concurrency=3,
                 models=("offline/careful", "offline/careless"))  # fmt: skip
    ids = list(
        run.conversations.order_by("entry__index", "run_agent_id").values_list("pk", flat=True)
    )
    Conversation.objects.filter(pk=ids[0]).update(status=ConversationStatus.FINISHED)
    Conversation.objects.filter(pk=ids[1]).update(
        status=ConversationStatus.RUNNING, heartbeat_at=timezone.now()
    )
    return run, ids


def test_a_run_plays_its_cases_in_order_every_agent_of_a_case_before_the_next(run_under_way):
    run, ids = run_under_way
    assert runs.run_dispatch(run, lambda claimed: None) == ids[2:4]


def test_every_run_query_for_pending_conversations_reads_an_index_range(run_under_way):
    run, _ = run_under_way
    queries = captured(lambda: runs.run_dispatch(run, lambda claimed: None))
    pending_reads = selects_of(queries, table="benchmark_conversation", containing="'pending'")
    # The conversations to claim, which also say whether any is left.
    assert len(pending_reads) == 1
    for sql in pending_reads:
        assert not index_range_problem(sql, table="benchmark_conversation"), sql


def test_a_finished_conversation_dispatches_in_a_fixed_handful_of_statements(run_under_way):
    # Every finished conversation dispatches: its run found and locked in one statement, its
    # in-flight rows read once (how many, and whether any was lost), the next pending ones,
    # and one guarded UPDATE per conversation claimed; nothing written when nothing was lost.
    run, ids = run_under_way
    queries = captured(lambda: runs.run_dispatch_after(ids[0], lambda claimed: None))
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    updates = [sql for sql in statements if sql.startswith("UPDATE")]
    assert len(updates) == 2 and all("'queued'" in sql for sql in updates)  # room for two
    assert len(statements) == 3 + len(updates), statements
    assert statements[0].startswith('SELECT "benchmark_run"')
    if connection.features.has_select_for_update:  # SQLite: its write lock is the database's
        assert "FOR UPDATE" in statements[0]


def test_a_conversation_lost_by_its_lease_is_put_back_by_the_next_finished_one(run_under_way):
    run, ids = run_under_way
    lapsed = timezone.now() - timedelta(seconds=settings.CONVERSATION_LEASE_SECONDS + 1)
    Conversation.objects.filter(pk=ids[1]).update(heartbeat_at=lapsed)

    claimed = runs.run_dispatch_after(ids[0], lambda claimed: None)

    # The lapsed conversation is pending again and, first by key, taken with the next one.
    assert claimed == [ids[1], ids[2], ids[3]]


@pytest.fixture
def set_under_way(distribution):
    """Three entries: one ready, one whose lease ran out, one never sent."""
    benchmark_set = make_set(distribution)
    ids = list(benchmark_set.entries.order_by("pk").values_list("pk", flat=True))
    BenchmarkEntry.objects.filter(pk=ids[0]).update(status=EntryStatus.READY)
    BenchmarkEntry.objects.filter(pk=ids[1]).update(
        claimed_until=timezone.now() - timedelta(seconds=1)
    )
    return benchmark_set, ids


def test_every_enrichment_query_for_pending_entries_reads_an_index_range(
    set_under_way, django_capture_on_commit_callbacks
):
    benchmark_set, ids = set_under_way
    sent: list = []
    with django_capture_on_commit_callbacks(execute=True):
        queries = captured(lambda: cases.enrichment_dispatch(benchmark_set, sent.extend))
    assert sorted(pk for pk, _ in sent) == ids[1:]
    pending_reads = selects_of(queries, table="benchmark_benchmarkentry", containing="'pending'")
    assert len(pending_reads) >= 3
    for sql in pending_reads:
        assert not index_range_problem(sql, table="benchmark_benchmarkentry"), sql


@pytest.mark.parametrize("kind", ["run", "set"])
def test_a_job_without_a_cost_limit_does_not_add_up_its_spend_on_every_dispatch(
    kind, run_under_way, set_under_way, django_capture_on_commit_callbacks
):
    run, _ = run_under_way
    benchmark_set, _ = set_under_way
    dispatch = {
        "run": lambda: runs.run_dispatch(run, lambda claimed: None),
        "set": lambda: cases.enrichment_dispatch(benchmark_set, lambda sent: None),
    }[kind]
    with django_capture_on_commit_callbacks(execute=True):
        queries = captured(dispatch)
    assert not [q["sql"] for q in queries.captured_queries if "SUM(" in q["sql"]]
