"""Studies, annotations, agreement tables and study archives through the API."""

import pytest

from alignment.models import ArchiveJob
from audit.models import AuditEvent
from tests.alignment.conftest import (  # noqa: F401 - fixtures
    annotated_study,
    people,
    scored_job,
    world,
    world_job,
)

pytestmark = pytest.mark.django_db

API = "/api/v1"


def test_a_study_is_created_with_the_new_study_form_rules(researcher_client, scored_job):  # noqa: F811
    payload = {"project": "API project", "name": "API round", "kind": "calibration",
               "round_number": 1, "scoring_jobs": [scored_job.pk], "sample_size": 4}  # fmt: skip
    response = researcher_client.post(f"{API}/studies", payload, content_type="application/json")
    assert response.status_code == 201, response.content
    study = response.json()
    assert study["items"] == 4 and study["scoring_jobs"] == [scored_job.pk]
    status = researcher_client.get(f"{API}/studies/{study['id']}").json()
    progress = status["progress"]
    assert progress["items"] == 4 and len(progress["missing"]) == 4
    assert {track["track"] for track in progress["tracks"]} == set(progress["missing"][0]["short"])


def test_a_study_the_service_refuses_answers_400_naming_the_field(researcher_client, scored_job):  # noqa: F811
    payload = {"project": "P", "name": "Too wide", "scoring_jobs": [scored_job.pk],
               "sample_size": 4, "overlap_clinical": 9}  # fmt: skip
    response = researcher_client.post(f"{API}/studies", payload, content_type="application/json")
    assert response.status_code == 400
    assert "overlap_clinical" in response.json()["detail"]


def test_the_agreement_table_has_every_figure_with_its_interval(
    researcher_client,
    annotated_study,  # noqa: F811
):
    body = researcher_client.get(f"{API}/studies/{annotated_study.pk}/agreement").json()
    assert body["table"] and body["rubrics"]
    sample = body["rubrics"][0]["sample"]
    for figure in ("jury_adjacent", "human_adjacent", "alpha_clinicians", "alpha_with_jury",
                   "mean_signed_diff", "ac2", "icc", "spearman"):  # fmt: skip
        assert {"estimate", "low", "high", "n_items", "n_ratings", "undefined"} <= set(
            sample[figure]
        )
    adjacent = sample["jury_adjacent"]
    assert adjacent["low"] <= adjacent["estimate"] <= adjacent["high"]
    refused = researcher_client.get(
        f"{API}/studies/{annotated_study.pk}/agreement", {"track": "surgical"}
    )
    assert refused.status_code == 400 and "track" in refused.json()["detail"]


def test_the_agreement_table_says_when_it_counts_synthetic_clinicians(
    researcher_client,
    annotated_study,  # noqa: F811
):
    annotated_study.items.first().assignments.update(synthetic=True)
    url = f"{API}/studies/{annotated_study.pk}/agreement"
    left_out, included = (researcher_client.get(url, query).json()
                          for query in ({}, {"synthetic": "1"}))  # fmt: skip
    assert left_out["synthetic_ratings"] == 0 < included["synthetic_ratings"]
    assert {row["Synthetic clinicians"] for row in left_out["table"]} == {"no"}
    assert {row["Synthetic clinicians"] for row in included["table"]} == {"yes"}


def test_the_annotation_export_is_a_recorded_download(researcher_client, annotated_study):  # noqa: F811
    response = researcher_client.get(
        f"{API}/studies/{annotated_study.pk}/annotations.csv", {"pseudonymise": "1"}
    )
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert b"rubric_id" in response.content
    assert AuditEvent.objects.filter(action="download.annotations", actor__username="rita")


def test_an_archive_export_is_requested_and_its_job_polled(researcher_client, annotated_study):  # noqa: F811
    response = researcher_client.post(
        f"{API}/archives/exports", {"study": annotated_study.pk}, content_type="application/json"
    )
    assert response.status_code == 201
    job = ArchiveJob.objects.get(pk=response.json()["id"])
    assert job.kind == "export" and job.requested_by.username == "rita"
    status = researcher_client.get(f"{API}/archives/{job.pk}").json()
    assert status["status"] in {"queued", "running", "finished"}


def test_an_archive_import_refuses_a_file_that_is_not_a_zip(researcher_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("notes.zip", b"not a zip at all", content_type="application/zip")
    response = researcher_client.post(f"{API}/archives/imports", {"file": upload})
    assert response.status_code == 400
    assert "notes.zip" in response.json()["detail"]


def test_the_study_tables_download_as_on_the_report_page(
    researcher_client,
    annotated_study,  # noqa: F811
):
    url = f"{API}/studies/{annotated_study.pk}/tables"
    latex = researcher_client.get(f"{url}/agreement.tex")
    assert latex.status_code == 200 and b"\\begin{tabular}" in latex.content
    weighted = researcher_client.get(f"{url}/weighted.csv", {"track": "clinical"})
    assert weighted.status_code == 200 and weighted.content
    assert researcher_client.get(f"{url}/nothing.csv").status_code == 404
    assert researcher_client.get(f"{url}/agreement.csv", {"track": "x"}).status_code == 400
