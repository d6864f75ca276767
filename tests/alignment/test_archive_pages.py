"""The archive's pages and commands: the export button makes a worker job whose page shows
its progress and then a download; the upload page imports an archive the same way; the
commands do both in their own process."""

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from alignment.models import ArchiveJob, ArchiveJobStatus
from alignment.services.archive import study_tables
from alignment.services.archive.jobs import archive_job_run
from annotation.models import Study
from audit.models import AuditEvent
from tests.alignment.archive_support import archive_bytes, build_world, members, rezip

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_study(scored_job):
    return build_world(scored_job)[0]


@pytest.fixture
def archive_folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path / "archives"


def upload(data: bytes, name: str = "paper.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/zip")


def test_the_study_page_has_the_export_button(researcher_client, world_study):
    page = researcher_client.get(reverse("annotation:staff_study", args=[world_study.pk]))
    assert reverse("alignment:study_archive", args=[world_study.pk]).encode() in (page.content)
    assert b"Export archive" in page.content


def test_export_runs_as_a_job_with_progress_then_a_download(
    researcher_client, world_study, archive_folder
):
    url = reverse("alignment:study_archive", args=[world_study.pk])
    response = researcher_client.post(url, {"with_usernames": "1"})
    job = ArchiveJob.objects.get()
    assert response["Location"] == reverse("alignment:archive_job", args=[job.pk])
    assert job.with_usernames and job.status == ArchiveJobStatus.QUEUED
    page = researcher_client.get(response["Location"], HTTP_HX_REQUEST="true")
    assert b'hx-trigger="every 2s"' in page.content and b"<html" not in page.content

    archive_job_run(job.pk)  # the worker's task

    page = researcher_client.get(response["Location"])
    assert b"every 2s" not in page.content and b"archive-download" in page.content
    download = researcher_client.get(reverse("alignment:archive_download", args=[job.pk]))
    data = b"".join(download.streaming_content)
    assert download["Content-Disposition"].startswith("attachment")
    assert (
        members(data)["tables/agreement.csv"].decode()
        == (study_tables(world_study)["tables/agreement.csv"])
    )
    assert b'"username":"arch-c-0"' in members(data)["data/people.jsonl"]
    assert not list(archive_folder.glob("*.part"))
    assert AuditEvent.objects.filter(action="study.archive_exported").count() == 1


def test_the_studies_list_links_the_import_page(researcher_client):
    page = researcher_client.get(reverse("annotation:staff_studies"))
    assert reverse("alignment:archive_import").encode() in page.content


def test_an_uploaded_archive_is_imported_by_a_job(researcher_client, world_study, archive_folder):
    data = archive_bytes(world_study)
    response = researcher_client.post(reverse("alignment:archive_import"), {"file": upload(data)})
    job = ArchiveJob.objects.get()
    assert response["Location"] == reverse("alignment:archive_job", args=[job.pk])
    archive_job_run(job.pk)
    job.refresh_from_db()
    assert job.status == ArchiveJobStatus.FINISHED and job.percent == 100
    assert job.study.imported_from == "paper.zip" and job.study.is_locked
    page = researcher_client.get(response["Location"])
    assert reverse("annotation:staff_study", args=[job.study.pk]).encode() in page.content
    assert AuditEvent.objects.get(action="study.archive_imported").after == {"archive": "paper.zip"}
    study_page = researcher_client.get(reverse("annotation:staff_study", args=[job.study.pk]))
    assert b"Imported" in study_page.content and b"paper.zip" in study_page.content


def test_a_foreign_upload_is_refused_on_the_page(researcher_client, archive_folder):
    response = researcher_client.post(
        reverse("alignment:archive_import"), {"file": upload(b"name,score\nx,1\n", "a.csv")}
    )
    assert response.status_code == 200
    assert b"not a zip archive" in response.content
    assert not ArchiveJob.objects.exists()
    assert not list(archive_folder.glob("incoming-*"))


def test_an_archive_over_its_own_limit_is_refused(researcher_client, settings, archive_folder):
    settings.ARCHIVE_UPLOAD_LIMIT_MB = 1
    big = upload(b"0" * 1_500_000)
    response = researcher_client.post(reverse("alignment:archive_import"), {"file": big})
    assert b"ARCHIVE_UPLOAD_LIMIT_MB" in response.content
    assert not ArchiveJob.objects.exists()


def test_archives_above_the_general_upload_limit_are_accepted(
    researcher_client, world_study, settings, archive_folder
):
    settings.UPLOAD_LIMIT_MB = 0  # every other upload form would refuse any file now
    response = researcher_client.post(
        reverse("alignment:archive_import"), {"file": upload(archive_bytes(world_study))}
    )
    assert response.status_code == 302


def test_a_tampered_archive_fails_its_job_and_saves_nothing(
    researcher_client, world_study, archive_folder
):
    contents = members(archive_bytes(world_study))
    contents["data/events.jsonl"] = contents["data/events.jsonl"].replace(b"e0001", b"e9999", 1)
    researcher_client.post(reverse("alignment:archive_import"), {"file": upload(rezip(contents))})
    job = ArchiveJob.objects.get()
    studies = Study.objects.count()
    archive_job_run(job.pk)
    job.refresh_from_db()
    assert job.status == ArchiveJobStatus.FAILED
    assert "data/events.jsonl does not match its sha256" in job.error
    assert Study.objects.count() == studies
    page = researcher_client.get(reverse("alignment:archive_job", args=[job.pk]))
    assert b"Nothing was imported" in page.content


def test_the_commands_export_and_import_a_study(world_study, tmp_path):
    path = tmp_path / "study.zip"
    out = io.StringIO()
    call_command("export_study", str(world_study.pk), "--out", str(path), stdout=out)
    assert "Wrote" in out.getvalue()
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))
    assert manifest["study"]["name"] == "Archive study"
    assert manifest["format"] == "carejury-study-archive"
    out = io.StringIO()
    call_command("import_study", str(path), stdout=out)
    assert "Imported study" in out.getvalue()
    imported = Study.objects.exclude(pk=world_study.pk).get()
    assert study_tables(imported) == study_tables(world_study)


def test_the_import_command_names_the_problem(tmp_path):
    path = tmp_path / "broken.zip"
    path.write_bytes(rezip({"hello.txt": b"hi"}))
    with pytest.raises(CommandError, match="manifest.json is missing"):
        call_command("import_study", str(path))
    with pytest.raises(CommandError, match="There is no study 999999"):
        call_command("export_study", "999999")


def test_a_second_delivery_leaves_a_job_another_worker_holds(world_study, archive_folder):
    held = ArchiveJob.objects.create(
        kind="export", study=world_study, file_name="held.zip", status=ArchiveJobStatus.RUNNING,
        claimed_until=timezone.now() + timedelta(minutes=5),
    )  # fmt: skip
    archive_job_run(held.pk)
    held.refresh_from_db()
    assert held.status == ArchiveJobStatus.RUNNING and not held.file_path


def test_a_job_whose_worker_died_is_taken_over(world_study, archive_folder):
    lost = ArchiveJob.objects.create(
        kind="export", study=world_study, file_name="lost.zip", status=ArchiveJobStatus.RUNNING,
        claimed_until=timezone.now() - timedelta(seconds=1), done=7, total=10,
    )  # fmt: skip
    archive_job_run(lost.pk)
    lost.refresh_from_db()
    assert lost.status == ArchiveJobStatus.FINISHED and lost.file_path.endswith("lost.zip")
