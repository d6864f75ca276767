"""The leaderboard and the static report bundle through the API: typed entries labelled
verified or custom with their reasons; a bundle launched, polled and downloaded as a zip."""

import io
import zipfile

import pytest

from alignment.engine import bundle as fmt
from alignment.models import ArchiveJob
from alignment.services.archive.jobs import archive_job_run
from audit.models import AuditEvent
from tests.alignment.conftest import scored_job, world, world_job  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

API = "/api/v1"


def test_the_leaderboard_labels_each_entry_with_its_reasons(researcher_client, scored_job):  # noqa: F811
    body = researcher_client.get(f"{API}/leaderboard").json()
    assert body["jobs"] >= 1 and body["entries"]
    entry = body["entries"][0]
    assert entry["job"] == scored_job.pk and entry["n"] > 0
    assert entry["label"] in {"verified", "custom"}
    assert (entry["label"] == "custom") == bool(entry["reasons"])
    aggregate = entry["aggregate"]
    assert aggregate["low"] <= aggregate["estimate"] <= aggregate["high"]
    means = [e["aggregate"]["estimate"] for e in body["entries"]]
    assert means == sorted(means, reverse=True)


def test_a_bundle_is_launched_polled_and_downloaded(
    researcher_client,
    scored_job,  # noqa: F811
    tmp_path,
    settings,
):
    settings.DATA_DIR = tmp_path / "data"
    response = researcher_client.post(
        f"{API}/report-bundles", {"scoring_jobs": [scored_job.pk]}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    launched = response.json()
    assert launched["kind"] == "bundle" and launched["scoring_jobs"] == [scored_job.pk]
    assert launched["clinician_text"] is False and launched["downloadable"] is False
    url = f"{API}/report-bundles/{launched['id']}"
    assert researcher_client.get(f"{url}/download").status_code == 404  # not written yet

    archive_job_run(launched["id"])  # the worker's task

    polled = researcher_client.get(url).json()
    assert polled["status"] == "finished" and polled["done"] == polled["total"] > 0
    download = researcher_client.get(f"{url}/download")
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        archive.extractall(tmp_path / "unzipped")
    assert fmt.bundle_verify(tmp_path / "unzipped" / f"report-job{scored_job.pk}") == []
    assert AuditEvent.objects.filter(action="download.report_bundle").count() == 1


def test_a_bundle_of_no_job_or_an_unknown_one_is_refused_naming_the_field(researcher_client):
    for jobs in ([], [999999]):
        response = researcher_client.post(
            f"{API}/report-bundles", {"scoring_jobs": jobs}, content_type="application/json"
        )
        assert response.status_code == 400
        problem = response.json()
        assert problem["errors"][0]["location"] == "body.scoring_jobs"
        assert problem["detail"].startswith("scoring_jobs: ")
    assert not ArchiveJob.objects.exists()


def test_an_archive_export_is_not_a_bundle(researcher_client):
    export = ArchiveJob.objects.create(kind="export", file_name="x.zip")
    assert researcher_client.get(f"{API}/report-bundles/{export.pk}").status_code == 404
