"""A scoring dispatch reads only the rows it is about: its cost stays the same from the first
judge call to the last (every finished call dispatches)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jury.models import JudgeScore, ScoreStatus
from jury.services import scoring
from tests.support.query_plans import index_range_problem, selects_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def job_under_way(played_run, offline_jury):
    """Two calls valid, one in flight, one whose lease ran out, the rest never sent; the
    window (3) has room for two."""
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, concurrency=3)
    ids = list(job.scores.order_by("pk").values_list("pk", flat=True))
    JudgeScore.objects.filter(pk__in=ids[:2]).update(status=ScoreStatus.VALID, score=4)
    now = timezone.now()
    JudgeScore.objects.filter(pk=ids[-1]).update(claimed_until=now + timedelta(minutes=5))
    JudgeScore.objects.filter(pk=ids[-2]).update(claimed_until=now - timedelta(seconds=1))
    return job, ids


def dispatch(job, capture) -> tuple[list, CaptureQueriesContext]:
    sent: list = []
    with CaptureQueriesContext(connection) as queries, capture(execute=True):
        scoring.scoring_dispatch(job, sent.extend)
    return sent, queries


def test_the_dispatch_sends_the_call_whose_lease_ran_out_and_the_first_never_sent(
    job_under_way, django_capture_on_commit_callbacks
):
    job, ids = job_under_way
    sent, _ = dispatch(job, django_capture_on_commit_callbacks)
    assert sorted(pk for pk, _ in sent) == [ids[2], ids[-2]]


def test_every_query_for_pending_calls_reads_an_index_range_without_sorting(
    job_under_way, django_capture_on_commit_callbacks
):
    job, _ = job_under_way
    _, queries = dispatch(job, django_capture_on_commit_callbacks)
    pending_reads = selects_of(queries, table="jury_judgescore", containing="'pending'")
    assert len(pending_reads) >= 3  # in flight, lease ran out, never sent; then "any left"
    for sql in pending_reads:
        assert not index_range_problem(sql, table="jury_judgescore"), sql


def test_a_job_without_a_cost_limit_does_not_add_up_its_spend_on_every_dispatch(
    job_under_way, django_capture_on_commit_callbacks
):
    job, _ = job_under_way
    _, queries = dispatch(job, django_capture_on_commit_callbacks)
    assert not [q["sql"] for q in queries.captured_queries if "SUM(" in q["sql"]]
