"""Archive exports and imports, and static report bundles (alignment.services.bundle), as jobs
in the workers, with progress for the page to poll.

A paper-scale study (1,200 conversations with traces and sandbox snapshots) takes far longer
to write or read than a web request may (bench/bench_archive.py), so the button and the upload
page create an ArchiveJob and a worker runs it. A finished export is a file under
DATA_DIR/archives, written under a temporary name and renamed when complete, so a half-written
archive is never offered. An import checks the upload's zip directory and manifest in the
request (a foreign or oversized file is refused at once) and leaves the rest to the worker;
the job is marked finished in the transaction that writes the study.

Files: an archive holds every score (and, when asked, usernames), so no copy stays on the
server once nobody needs it. An upload is deleted as soon as its import ended, finished or
failed (refused in the request: deleted there); a failed export's partial file at once; a
finished export once its download is no longer offered (ARCHIVE_DOWNLOAD_HOURS). The watch
(jobs.services.watch, kind "archive") looks after every job that still holds a file, so
a crash anywhere ends the same way: a job whose worker died is sent again once its claim ran
out (one whose worker stopped MAX_ATTEMPTS times ends failed), and a job that ended but whose
worker died before deleting its file has the file deleted at the next look. A file no job holds
(a request that died between storing an upload and saving its job) is swept after an hour.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from alignment.engine import archive as fmt
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from annotation.models import Study
from audit.services import audit_record
from jobs.services import watch
from jobs.services.leases import lease
from jobs.services.starts import job_start
from jobs.signals import job_ended_send
from llm.engine.providers.redaction import failure_text

PROGRESS_EVERY_SECONDS = 0.5
MAX_ATTEMPTS = 3
UPLOAD_PREFIX = "incoming-"
# Files no job holds are left alone this long: the request storing an upload saves its job
# just after, in a transaction other processes cannot see yet.
UNHELD_FILE_GRACE = timedelta(hours=1)
LIVE = (ArchiveJobStatus.QUEUED, ArchiveJobStatus.RUNNING)


class _TakenOver(Exception):
    """Another worker claimed the job after this one's claim ran out: its outcome is theirs."""


def archive_dir() -> Path:
    folder = Path(settings.DATA_DIR) / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def archive_export_request(study: Study, *, user, with_usernames: bool) -> ArchiveJob:
    archive_files_sweep()
    job = ArchiveJob.objects.create(
        kind=ArchiveJobKind.EXPORT,
        study=study,
        with_usernames=with_usernames,
        file_name=_export_module().archive_file_name(study),
        requested_by=user,
    )
    audit_record(
        actor=user,
        action="study.archive_exported",
        target=study,
        after={"job": job.pk, "with_usernames": with_usernames},
    )
    _enqueue(job)
    return job


def report_bundle_request(scoring_jobs: list, *, user, clinician_text: bool) -> ArchiveJob:
    """Queue the static report of `scoring_jobs` (several: with their leaderboard)."""
    archive_files_sweep()
    job = ArchiveJob.objects.create(
        kind=ArchiveJobKind.BUNDLE,
        clinician_text=clinician_text,
        file_name=f"{_bundle_module().bundle_name(scoring_jobs)}.zip",
        requested_by=user,
    )
    job.scoring_jobs.set(scoring_jobs)
    for scoring_job in scoring_jobs:
        audit_record(
            actor=user,
            action="report.bundle_requested",
            target=scoring_job,
            after={"job": job.pk, "clinician_text": clinician_text},
        )
    _enqueue(job)
    return job


def archive_import_request(upload, *, user) -> ArchiveJob:
    """Keep the upload and queue its import; ArchiveError at once for a file that is not a
    study archive, a zip bomb or another format version (the stored upload is deleted)."""
    archive_files_sweep()
    path = archive_dir() / f"{UPLOAD_PREFIX}{uuid.uuid4().hex}.zip"
    try:
        with path.open("wb") as stored:
            for chunk in upload.chunks():
                stored.write(chunk)
        with fmt.open_zip(path) as archive:
            fmt.check_directory(archive, _load_module().archive_limits())
            fmt.read_manifest(archive)
        job = ArchiveJob.objects.create(
            kind=ArchiveJobKind.IMPORT,
            file_name=Path(upload.name).name[:300],
            file_path=str(path),
            size_bytes=path.stat().st_size,
            requested_by=user,
        )
    except BaseException:
        path.unlink(missing_ok=True)  # refused, or the request failed: nobody will read it
        raise
    _enqueue(job)
    return job


# The export, the import and the bundle draw on pandas, scipy and matplotlib: loaded when a job
# uses them, not when a worker starts (every worker imports this module to register the task).
def _export_module():
    from alignment.services.archive import export

    return export


def _load_module():
    from alignment.services.archive import load

    return load


def _bundle_module():
    from alignment.services import bundle

    return bundle


def archive_job_run(job_id: int) -> None:
    """Run one job (the worker's task), unless another worker holds it. A job whose worker
    died starts over once its claim runs out."""
    job = _claim(job_id)
    if job is None:
        return
    try:
        if job.kind == ArchiveJobKind.EXPORT:
            _export(job)
        elif job.kind == ArchiveJobKind.BUNDLE:
            _bundle(job)
        else:
            _import(job)
    except _TakenOver:
        return
    except (fmt.ArchiveError, _bundle_module().BundleError) as error:
        _end(job, ArchiveJobStatus.FAILED, error=str(error))
    except Exception as error:
        # The job must end either way; the worker's log keeps the traceback.
        _end(job, ArchiveJobStatus.FAILED, error=failure_text(error))
        raise


# --- the watch: lost jobs sent again, files deleted once released ------------------------------


def watched_job_ids() -> list[int]:
    """Jobs the watch looks after: every job that still holds a file (live ones included)."""
    holding = ArchiveJob.objects.filter(file_removed_at__isnull=True)
    return list(holding.values_list("pk", flat=True))


def archive_job_watch(job_id: int) -> bool:
    """One look at a job: send it again if its worker is gone, delete its files once it no
    longer needs them; whether to look again."""
    job = ArchiveJob.objects.filter(pk=job_id).first()
    if job is None:
        return False
    if _lost(job):
        _send(job.pk)
    archive_files_sweep()
    return archive_files_release(job.pk)


def archive_files_release(job_id: int) -> bool:
    """Delete the job's files if it no longer needs them; whether it still holds any."""
    job = ArchiveJob.objects.filter(pk=job_id, file_removed_at__isnull=True).first()
    if job is None:
        return False
    if job.live or job.downloadable:
        return True
    for path in _files_of(job):
        path.unlink(missing_ok=True)
    ArchiveJob.objects.filter(pk=job.pk).update(file_removed_at=timezone.now())
    return False


def archive_files_sweep() -> list[Path]:
    """Delete the archive folder's files that no job holds, once older than the grace;
    returns them."""
    held = {
        path
        for job in ArchiveJob.objects.filter(file_removed_at__isnull=True)
        for path in _files_of(job)
    }
    cutoff = time.time() - UNHELD_FILE_GRACE.total_seconds()
    swept = [
        path
        for path in archive_dir().iterdir()
        if path.is_file() and path not in held and path.stat().st_mtime < cutoff
    ]
    for path in swept:
        path.unlink(missing_ok=True)
    return swept


def _files_of(job: ArchiveJob) -> list[Path]:
    folder = archive_dir()
    if job.kind != ArchiveJobKind.IMPORT:
        return sorted(folder.glob(f"{job.pk}-*"))  # the file written and any partial attempt
    # Only the upload this site stored: never a file the job was pointed at elsewhere.
    upload = Path(job.file_path)
    if job.file_path and upload.parent == folder and upload.name.startswith(UPLOAD_PREFIX):
        return [upload]
    return []


def _lost(job: ArchiveJob) -> bool:
    """A running job whose worker stopped reporting, or a queued one no worker took for a
    whole lease (its message lost with the queue)."""
    now = timezone.now()
    if job.status == ArchiveJobStatus.RUNNING:
        return job.claimed_until is None or job.claimed_until < now
    return job.status == ArchiveJobStatus.QUEUED and job.created_at < now - lease()


# --- one job -----------------------------------------------------------------------------------


def _export(job: ArchiveJob) -> None:
    final = archive_dir() / f"{job.pk}-{job.file_name}"
    partial_file = final.with_name(f"{final.name}.{job.attempts}.part")
    _export_module().study_archive_write(
        job.study, partial_file, with_usernames=job.with_usernames, progress=_reporter(job)
    )
    _offer(job, partial_file, final)


def _bundle(job: ArchiveJob) -> None:
    final = archive_dir() / f"{job.pk}-{job.file_name}"
    partial_file = final.with_name(f"{final.name}.{job.attempts}.part")
    scoring_jobs = list(job.scoring_jobs.select_related("run", "jury").order_by("pk"))
    _bundle_module().report_bundle_zip_write(
        scoring_jobs,
        partial_file,
        include_clinician_text=job.clinician_text,
        progress=_reporter(job),
    )
    _offer(job, partial_file, final)


def _offer(job: ArchiveJob, partial_file: Path, final: Path) -> None:
    """Finish the job with the written file under its final name, if the job is still ours."""
    if not _still_ours(job):
        partial_file.unlink(missing_ok=True)
        raise _TakenOver
    partial_file.rename(final)
    _end(job, ArchiveJobStatus.FINISHED, file_path=str(final), size_bytes=final.stat().st_size)


def _import(job: ArchiveJob) -> None:
    def finished(imported) -> None:
        if not _end(job, ArchiveJobStatus.FINISHED, study=imported.study):
            raise _TakenOver  # rolls the study back: the worker holding the job imports it
        audit_record(
            actor=job.requested_by,
            action="study.archive_imported",
            target=imported.study,
            after={"archive": job.file_name},
        )

    _load_module().study_archive_import(
        job.file_path, archive_name=job.file_name, progress=_reporter(job), on_saved=finished
    )


def _claim(job_id: int) -> ArchiveJob | None:
    """The job, claimed for this worker (its `attempts` names the claim); None when another
    worker holds it, it ended, or its workers stopped too often (it ends failed)."""
    now = timezone.now()
    with transaction.atomic():
        job = ArchiveJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or not _claimable(job):
            return None
        if job.attempts >= MAX_ATTEMPTS:
            _end(job, ArchiveJobStatus.FAILED, error=_stopped_too_often(job))
            return None
        job.status, job.done = ArchiveJobStatus.RUNNING, 0
        job.claimed_until, job.attempts = now + lease(), job.attempts + 1
        job.save(update_fields=["status", "done", "claimed_until", "attempts"])
    return job


def _stopped_too_often(job: ArchiveJob) -> str:
    stopped = f"stopped {job.attempts} times (out of memory, or killed)"
    if job.kind == ArchiveJobKind.IMPORT:
        return f"the worker running this job {stopped}; nothing was imported"
    return f"the worker writing this archive {stopped}"


def _claimable(job: ArchiveJob) -> bool:
    return job.status == ArchiveJobStatus.QUEUED or (
        job.status == ArchiveJobStatus.RUNNING and _lost(job)
    )


def _still_ours(job: ArchiveJob) -> bool:
    return ArchiveJob.objects.filter(
        pk=job.pk, attempts=job.attempts, status=ArchiveJobStatus.RUNNING
    ).exists()


def _reporter(job: ArchiveJob):
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY_SECONDS or done >= total:
            last[0] = now
            ArchiveJob.objects.filter(pk=job.pk, attempts=job.attempts).update(
                done=done, total=total, claimed_until=timezone.now() + lease()
            )

    return report


def _end(job: ArchiveJob, status: str, **fields) -> bool:
    """End the job if this worker's claim still holds; its files are released once the
    outcome is committed. Whether it was ended here."""
    fields |= {"status": status, "finished_at": timezone.now(), "claimed_until": None}
    if status == ArchiveJobStatus.FINISHED:
        total = ArchiveJob.objects.filter(pk=job.pk).values_list("total", flat=True).first()
        fields |= {"done": total or 1, "total": total or 1}
    ended = ArchiveJob.objects.filter(pk=job.pk, attempts=job.attempts, status__in=LIVE).update(
        **fields
    )
    if ended:
        transaction.on_commit(partial(archive_files_release, job.pk))
        job_ended_send(job, status)
    return bool(ended)


def _send(job_id: int) -> None:
    # An archive job's start (declared in alignment.tasks) only sends its task: the watch
    # begins once, in _enqueue, and sends a lost job again through here.
    job_start(ArchiveJob(pk=job_id))


def _enqueue(job: ArchiveJob) -> None:
    transaction.on_commit(partial(_send, job.pk))
    watch.watch_start("archive", job.pk)
