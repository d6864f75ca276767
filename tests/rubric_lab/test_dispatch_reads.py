"""A rubric-lab job's dispatch reads only the rows it is about (the leased units share
jobs.services.leases with judge calls and entries): its cost stays flat as it runs."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rubric_lab.models import GenerationStatus, RubricGeneration
from rubric_lab.services import pipeline
from tests.support.query_plans import index_range_problem, selects_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def job_under_way(played_run):
    """Three generations: one finished, two never sent."""
    job = pipeline.generation_job_launch(
        conversations=list(played_run.conversations.order_by("pk")[:3]),
        generator_model="offline/standard", concurrency=2,
    )  # fmt: skip
    first = job.generations.order_by("pk").first()
    RubricGeneration.objects.filter(pk=first.pk).update(status=GenerationStatus.FINISHED)
    return job


def test_every_query_for_pending_generations_reads_an_index_range_and_sums_nothing(
    job_under_way, django_capture_on_commit_callbacks
):
    sent: list = []
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        pipeline.generation_dispatch(job_under_way, sent.extend)
    assert len(sent) == 2
    pending_reads = selects_of(queries, table="rubric_lab_rubricgeneration", containing="'pending'")
    assert len(pending_reads) >= 3
    for sql in pending_reads:
        assert not index_range_problem(sql, table="rubric_lab_rubricgeneration"), sql
    assert not [q["sql"] for q in queries.captured_queries if "SUM(" in q["sql"]]
