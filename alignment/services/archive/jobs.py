"""Archive exports and imports as jobs in the workers, with progress for the page to poll.

A paper-scale study (1,200 conversations with traces and sandbox snapshots) takes far longer
to write or read than a web request may (bench/bench_archive.py), so the button and the upload
page create an ArchiveJob and a worker runs it. A finished export is a file under
DATA_DIR/archives, written under a temporary name and renamed when complete, so a half-written
archive is never offered. An import checks the upload's zip directory and manifest in the
request (a foreign or oversized file is refused at once) and leaves the rest to the worker;
the job is marked finished in the transaction that writes the study.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from alignment.engine import archive as fmt
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from alignment.services.archive.export import archive_file_name, study_archive_write
from alignment.services.archive.load import archive_limits, study_archive_import
from annotation.models import Study
from audit.services import audit_record
from benchmark.engine.providers.redaction import failure_text
from benchmark.services.leases import lease

PROGRESS_EVERY_SECONDS = 0.5


def archive_dir() -> Path:
    folder = Path(settings.DATA_DIR) / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def archive_export_request(study: Study, *, user, with_usernames: bool) -> ArchiveJob:
    job = ArchiveJob.objects.create(
        kind=ArchiveJobKind.EXPORT, study=study, with_usernames=with_usernames,
        file_name=archive_file_name(study), requested_by=user,
    )  # fmt: skip
    audit_record(actor=user, action="study.archive_exported", target=study,
                 after={"job": job.pk, "with_usernames": with_usernames})  # fmt: skip
    _enqueue(job)
    return job


def archive_import_request(upload, *, user) -> ArchiveJob:
    """Keep the upload and queue its import; ArchiveError at once for a file that is not a
    study archive, a zip bomb or another format version."""
    path = archive_dir() / f"incoming-{uuid.uuid4().hex}.zip"
    with path.open("wb") as stored:
        for chunk in upload.chunks():
            stored.write(chunk)
    try:
        with fmt.open_zip(path) as archive:
            fmt.check_directory(archive, archive_limits())
            fmt.read_manifest(archive)
    except fmt.ArchiveError:
        path.unlink(missing_ok=True)
        raise
    job = ArchiveJob.objects.create(
        kind=ArchiveJobKind.IMPORT, file_name=Path(upload.name).name[:300],
        file_path=str(path), size_bytes=path.stat().st_size, requested_by=user,
    )  # fmt: skip
    _enqueue(job)
    return job


def archive_job_run(job_id: int) -> None:
    """Run one job (the worker's task), unless another worker holds it. A job whose worker
    died starts over once its claim runs out."""
    if not _claim(job_id):
        return
    job = ArchiveJob.objects.select_related("study").get(pk=job_id)
    try:
        if job.kind == ArchiveJobKind.EXPORT:
            _export(job)
        else:
            _import(job)
    except fmt.ArchiveError as error:
        _end(job, ArchiveJobStatus.FAILED, error=str(error))
    except Exception as error:
        # The job must end either way; the worker's log keeps the traceback.
        _end(job, ArchiveJobStatus.FAILED, error=failure_text(error))
        raise


def _export(job: ArchiveJob) -> None:
    final = archive_dir() / f"{job.pk}-{job.file_name}"
    partial = final.with_suffix(".part")
    study_archive_write(
        job.study, partial, with_usernames=job.with_usernames, progress=_reporter(job)
    )
    partial.rename(final)
    _end(job, ArchiveJobStatus.FINISHED, file_path=str(final), size_bytes=final.stat().st_size)


def _import(job: ArchiveJob) -> None:
    def finished(imported) -> None:
        _end(job, ArchiveJobStatus.FINISHED, study=imported.study)
        audit_record(actor=job.requested_by, action="study.archive_imported",
                     target=imported.study, after={"archive": job.file_name})  # fmt: skip

    study_archive_import(
        job.file_path, archive_name=job.file_name, progress=_reporter(job), on_saved=finished
    )


def _claim(job_id: int) -> bool:
    now = timezone.now()
    claimable = Q(status=ArchiveJobStatus.QUEUED) | Q(
        status=ArchiveJobStatus.RUNNING, claimed_until__lt=now
    )
    claimed = ArchiveJob.objects.filter(claimable, pk=job_id).update(
        status=ArchiveJobStatus.RUNNING, done=0, claimed_until=now + lease()
    )
    return claimed == 1


def _reporter(job: ArchiveJob):
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or done >= total:
            last[0] = now
            ArchiveJob.objects.filter(pk=job.pk).update(
                done=done, total=total, claimed_until=timezone.now() + lease()
            )

    return report


def _end(job: ArchiveJob, status: str, **fields) -> None:
    fields |= {"status": status, "finished_at": timezone.now()}
    if status == ArchiveJobStatus.FINISHED:
        total = ArchiveJob.objects.filter(pk=job.pk).values_list("total", flat=True).first()
        fields |= {"done": total or 1, "total": total or 1}
    ArchiveJob.objects.filter(pk=job.pk).update(**fields)


def _enqueue(job: ArchiveJob) -> None:
    from alignment.tasks import archive_job_task

    transaction.on_commit(lambda: archive_job_task.delay(job.pk))
