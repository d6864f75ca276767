"""What stays in DATA_DIR/archives: an upload only until its import ended (finished, failed,
refused, or after a crash), an export only while its download is offered."""

import os
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from alignment.models import ArchiveJob, ArchiveJobStatus
from alignment.services.archive import jobs
from alignment.services.archive.jobs import (
    MAX_ATTEMPTS,
    archive_files_sweep,
    archive_job_run,
    archive_job_watch,
    watched_job_ids,
)
from alignment.tasks import archive_job_task
from annotation.models import Study
from tests.alignment.archive_support import archive_bytes, build_world, members, rezip

pytestmark = pytest.mark.django_db


@pytest.fixture
def world_study(scored_job):
    return build_world(scored_job)[0]


@pytest.fixture
def folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path / "archives"


@pytest.fixture
def sent(monkeypatch):
    """Task messages the watch sends (job ids), instead of a queue."""
    messages: list[int] = []
    monkeypatch.setattr(jobs, "_send", messages.append)
    return messages


def uploaded(client, data: bytes) -> ArchiveJob:
    upload = SimpleUploadedFile("paper.zip", data, content_type="application/zip")
    client.post(reverse("alignment:archive_import"), {"file": upload})
    return ArchiveJob.objects.get()


def files(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def run(job_id: int, capture) -> ArchiveJob:
    """The worker's task, with what it leaves for after the commit done too."""
    with capture(execute=True):
        archive_job_run(job_id)
    return ArchiveJob.objects.get(pk=job_id)


def crashed(job: ArchiveJob, attempts: int = 1) -> None:
    """The state a SIGKILLed worker leaves: running, its claim run out."""
    ArchiveJob.objects.filter(pk=job.pk).update(
        status=ArchiveJobStatus.RUNNING, attempts=attempts,
        claimed_until=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip


# --- queueing ----------------------------------------------------------------------------------


def test_a_request_queues_its_task_once_it_commits(
    researcher_client, world_study, folder, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(archive_job_task, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        job = uploaded(researcher_client, archive_bytes(world_study))
    assert queued == [job.pk]
    crashed(job)
    assert archive_job_watch(job.pk) is True and queued == [job.pk, job.pk]  # sent again


# --- uploads -----------------------------------------------------------------------------------


def test_an_upload_is_deleted_once_its_import_finished(
    researcher_client, world_study, folder, django_capture_on_commit_callbacks
):
    job = uploaded(researcher_client, archive_bytes(world_study))
    assert files(folder) == [os.path.basename(job.file_path)]
    job = run(job.pk, django_capture_on_commit_callbacks)
    assert job.status == ArchiveJobStatus.FINISHED and job.study.is_locked
    assert files(folder) == [] and job.file_removed_at is not None
    assert job.pk not in watched_job_ids()


def test_an_upload_is_deleted_once_its_import_failed(
    researcher_client, world_study, folder, django_capture_on_commit_callbacks
):
    contents = members(archive_bytes(world_study))
    contents["data/events.jsonl"] = contents["data/events.jsonl"].replace(b"e0001", b"e9999", 1)
    job = run(uploaded(researcher_client, rezip(contents)).pk, django_capture_on_commit_callbacks)
    assert job.status == ArchiveJobStatus.FAILED and "sha256" in job.error
    assert files(folder) == []


def test_an_upload_refused_in_the_request_is_deleted_there(researcher_client, folder):
    response = researcher_client.post(
        reverse("alignment:archive_import"),
        {"file": SimpleUploadedFile("notes.zip", rezip({"notes.txt": b"hello"}))},
    )
    assert b"manifest.json is missing" in response.content
    assert not ArchiveJob.objects.exists() and files(folder) == []


def test_an_import_whose_worker_died_is_sent_again_by_the_watch_then_its_upload_deleted(
    researcher_client, world_study, folder, sent, django_capture_on_commit_callbacks
):
    job = uploaded(researcher_client, archive_bytes(world_study))
    jobs._claim(job.pk)  # a worker took it...
    assert archive_job_watch(job.pk) is True and sent == []  # ...and still reports
    crashed(job)  # ...then died
    assert job.pk in watched_job_ids()
    assert archive_job_watch(job.pk) is True and sent == [job.pk]
    job = run(job.pk, django_capture_on_commit_callbacks)  # the message the watch sent
    assert job.status == ArchiveJobStatus.FINISHED and job.attempts == 2
    assert files(folder) == []
    assert archive_job_watch(job.pk) is False  # nothing left to look after


def test_a_job_no_worker_took_for_a_whole_lease_is_sent_again(world_study, folder, sent):
    job = ArchiveJob.objects.create(kind="export", study=world_study, file_name="x.zip")
    assert archive_job_watch(job.pk) is True and sent == []  # queued a moment ago: waiting
    ArchiveJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert archive_job_watch(job.pk) is True and sent == [job.pk]  # its message was lost


def test_an_import_that_ended_before_its_worker_deleted_the_upload_has_it_deleted_by_the_watch(
    researcher_client, world_study, folder, sent
):
    job = uploaded(researcher_client, archive_bytes(world_study))
    archive_job_run(job.pk)  # its after-commit deletion never ran: the worker died there
    assert ArchiveJob.objects.get(pk=job.pk).status == ArchiveJobStatus.FINISHED
    assert len(files(folder)) == 1 and job.pk in watched_job_ids()
    assert archive_job_watch(job.pk) is False and sent == []
    assert files(folder) == []


def test_a_job_whose_worker_stopped_every_time_ends_failed_and_its_upload_is_deleted(
    researcher_client, world_study, folder, django_capture_on_commit_callbacks
):
    job = uploaded(researcher_client, archive_bytes(world_study))
    crashed(job, attempts=MAX_ATTEMPTS)
    studies = Study.objects.count()
    job = run(job.pk, django_capture_on_commit_callbacks)
    assert job.status == ArchiveJobStatus.FAILED
    assert f"stopped {MAX_ATTEMPTS} times" in job.error and "nothing was imported" in job.error
    assert Study.objects.count() == studies and files(folder) == []


def test_a_worker_whose_claim_was_taken_over_writes_no_second_study(
    researcher_client, world_study, folder
):
    job = uploaded(researcher_client, archive_bytes(world_study))
    first = jobs._claim(job.pk)
    crashed(job, attempts=first.attempts)  # the first worker stalled past its claim
    second = jobs._claim(job.pk)
    assert second.attempts == first.attempts + 1
    studies = Study.objects.count()
    with pytest.raises(jobs._TakenOver):
        jobs._import(first)
    assert Study.objects.count() == studies
    jobs._import(second)
    assert Study.objects.count() == studies + 1


def test_files_no_job_holds_are_swept_after_an_hour(folder, world_study):
    folder.mkdir(parents=True)
    stray, fresh = folder / "incoming-stray.zip", folder / "incoming-fresh.zip"
    stray.write_bytes(b"left by a request that died")
    fresh.write_bytes(b"a job is being saved for it right now")
    two_hours_ago = time.time() - 7200
    os.utime(stray, (two_hours_ago, two_hours_ago))
    assert archive_files_sweep() == [stray]
    assert files(folder) == ["incoming-fresh.zip"]


# --- exports -----------------------------------------------------------------------------------


def test_an_export_is_offered_for_its_hours_then_deleted(
    researcher_client, world_study, folder, settings, sent, django_capture_on_commit_callbacks
):
    settings.ARCHIVE_DOWNLOAD_HOURS = 24
    researcher_client.post(reverse("alignment:study_archive", args=[world_study.pk]))
    job = run(ArchiveJob.objects.get().pk, django_capture_on_commit_callbacks)
    page_url = reverse("alignment:archive_job", args=[job.pk])
    download = reverse("alignment:archive_download", args=[job.pk])
    assert files(folder) == [os.path.basename(job.file_path)]
    page = researcher_client.get(page_url).content.decode()
    assert "archive-download" in page and "Offered until" in page
    assert archive_job_watch(job.pk) is True  # still offered: kept, looked at again

    ArchiveJob.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(hours=25))
    assert researcher_client.get(download).status_code == 404
    page = researcher_client.get(page_url).content.decode()
    assert "archive-download" not in page and "archive-expired" in page
    assert archive_job_watch(job.pk) is False
    assert files(folder) == [] and sent == []


def test_a_failed_export_leaves_no_partial_file(
    world_study, folder, monkeypatch, django_capture_on_commit_callbacks
):
    def broken(study, target, **options):
        target.write_bytes(b"half an archive")
        raise OSError("disk full")

    from alignment.services.archive import export

    monkeypatch.setattr(export, "study_archive_write", broken)
    job = ArchiveJob.objects.create(kind="export", study=world_study, file_name="x.zip")
    with django_capture_on_commit_callbacks() as after_commit, pytest.raises(OSError):
        archive_job_run(job.pk)  # the worker logs the traceback
    for callback in after_commit:
        callback()
    job.refresh_from_db()
    assert job.status == ArchiveJobStatus.FAILED and "disk full" in job.error
    assert files(folder) == []
