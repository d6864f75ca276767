"""Conversations, judge scores and annotations as Parquet beside CSV / JSONL, from the pages
and the API, recorded like every download; the scores stream from the database in batches."""

import io
import json

import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from audit.models import AuditEvent
from jury.services import score_exports
from tests.alignment.conftest import (  # noqa: F401 - fixtures
    annotated_study,
    people,
    scored_job,
    world,
    world_job,
)

pytestmark = pytest.mark.django_db


def parquet_of(response):
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    return pq.read_table(io.BytesIO(b"".join(response.streaming_content)))


def test_the_run_export_as_parquet_has_one_row_per_conversation_with_its_trace(
    researcher_client,
    scored_job,  # noqa: F811
):
    run = scored_job.run
    table = parquet_of(
        researcher_client.get(reverse("benchmark:run_export_parquet", args=[run.pk]))
    )
    lines = b"".join(
        researcher_client.get(reverse("benchmark:run_export", args=[run.pk])).streaming_content
    )
    records = [json.loads(line) for line in lines.splitlines()]
    rows = table.to_pylist()
    assert [r["conversation_id"] for r in rows] == [r["conversation_id"] for r in records]
    assert json.loads(rows[0]["events"])[0]["event_id"] == records[0]["events"][0]["event_id"]
    assert rows[0]["agent_model"] == records[0]["agent"]["model"]
    assert AuditEvent.objects.filter(action="download.conversations").count() == 2


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_judge_score_of_a_job_is_exported(researcher_client, scored_job, fmt):  # noqa: F811
    response = researcher_client.get(reverse("jury:job_scores_export", args=[scored_job.pk, fmt]))
    body = b"".join(response.streaming_content)
    count = scored_job.scores.count()
    if fmt == "parquet":
        rows = pq.read_table(io.BytesIO(body)).to_pylist()
    elif fmt == "jsonl":
        rows = [json.loads(line) for line in body.splitlines()]
    else:
        rows = body.decode().splitlines()[1:]
    assert len(rows) == count
    assert AuditEvent.objects.filter(action="download.table", actor__username="rita").exists()


def test_judge_scores_are_read_in_batches_of_ids(scored_job, monkeypatch):  # noqa: F811
    monkeypatch.setattr(score_exports, "BATCH", 7)
    rows = list(score_exports.judge_score_rows(scored_job))
    assert [r["score_id"] for r in rows] == sorted(scored_job.scores.values_list("pk", flat=True))


def test_annotations_export_as_parquet_with_typed_columns(researcher_client, annotated_study):  # noqa: F811
    response = researcher_client.get(
        reverse("annotation:staff_study_export", args=[annotated_study.pk, "parquet"]),
        {"pseudonymise": "1"},
    )
    table = parquet_of(response)
    csv_rows = (
        researcher_client.get(
            reverse("annotation:staff_study_export", args=[annotated_study.pk, "csv"])
        )
        .content.decode()
        .splitlines()[1:]
    )
    assert table.num_rows == len(csv_rows) > 0
    assert str(table.schema.field("score").type) == "int64"
    assert {name[0] for name in table.column("annotator").to_pylist()} == {"A"}


def test_the_api_offers_the_same_parquet_files(researcher_client, scored_job):  # noqa: F811
    run_file = parquet_of(
        researcher_client.get(f"/api/v1/runs/{scored_job.run_id}/conversations.parquet")
    )
    assert run_file.num_rows == scored_job.run.conversations.count()
    scores = parquet_of(
        researcher_client.get(f"/api/v1/scoring-jobs/{scored_job.pk}/scores.parquet")
    )
    assert scores.num_rows == scored_job.scores.count()
    assert (
        researcher_client.get(f"/api/v1/scoring-jobs/{scored_job.pk}/scores.xlsx").status_code
        == 404
    )
