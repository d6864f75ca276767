"""A study archive exported and imported by a real worker process, as the buttons do; an
import a killed worker left behind is finished by the next worker, and its upload deleted."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Role, Track
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from alignment.services.archive import study_archive_write, study_tables
from annotation.models import Project, Study, StudyItem
from config import env
from jury.services import juries, rubrics, scoring
from tests.annotation.staff_support import annotate, full_scores
from tests.conftest import make_user
from tests.support.builders import enriched_set, launched_run, played
from tests.support.workers import (
    client_app,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

# The archive's worker path on the production database (PostgreSQL); both legs run the
# archive's round trips without a worker (tests/alignment/test_archive*.py).
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.leg("postgres"),
]


def small_study() -> Study:
    """One played case of two agents, scored by the demo jury, in a study annotated by two
    clinicians."""
    run = played(
        launched_run(
            enriched_set(name="archive set", size=1, sampler_seed=3),
            name="archive run",
            models=("offline/careful", "offline/careless"),
        )
    )
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    study = Study.objects.create(
        project=Project.objects.create(name="Worker archive"),
        name="Worker study",
        kind="target",
        sample_size=2,
    )
    study.scoring_jobs.set([job])
    study.rubric_versions.set(rubrics.current_versions())
    people = [make_user(f"w-clin-{n}", Role.ANNOTATOR, Track.CLINICAL) for n in range(2)]
    for position, conversation in enumerate(run.conversations.order_by("pk")):
        item = StudyItem.objects.create(study=study, conversation=conversation, position=position)
        for offset, person in enumerate(people):
            annotate(item, person, scores=full_scores(study, Track.CLINICAL, score=3 + offset))
    return study


def finished(job: ArchiveJob) -> bool:
    job.refresh_from_db()
    return not job.live


def test_a_worker_exports_and_imports_a_study(tmp_path):
    study = small_study()
    tables = study_tables(study)
    worker = start_worker(worker_env(tmp_path, DATABASE_URL=test_database_url()))
    app = client_app(env.celery_transport(None, tmp_path / "queue"))
    try:
        export = ArchiveJob.objects.create(kind=ArchiveJobKind.EXPORT, study=study,
                                           file_name="worker.zip")  # fmt: skip
        app.send_task("alignment.archive_job", args=[export.pk])
        wait_for(lambda: finished(export), timeout=120, what="the export job")
        assert export.status == ArchiveJobStatus.FINISHED, export.error
        assert export.file_path.startswith(str(tmp_path)) and export.percent == 100
        load = ArchiveJob.objects.create(kind=ArchiveJobKind.IMPORT, file_name="worker.zip",
                                         file_path=export.file_path)  # fmt: skip
        app.send_task("alignment.archive_job", args=[load.pk])
        wait_for(lambda: finished(load), timeout=120, what="the import job")
    finally:
        stop_worker(worker)
    assert load.status == ArchiveJobStatus.FINISHED, load.error
    assert load.study.pk != study.pk and load.study.is_locked
    assert study_tables(load.study) == tables


def test_an_import_a_killed_worker_left_is_finished_by_the_next_worker_and_its_upload_deleted(
    tmp_path,
):
    """The state a worker SIGKILLed mid-import leaves (running, claim run out, the upload on
    disk, nothing written: the import is one transaction). Nobody presses anything: a worker
    that connects takes up the watch, which sends the job again."""
    study = small_study()
    tables = study_tables(study)
    upload = tmp_path / "archives" / "incoming-killed.zip"
    upload.parent.mkdir()
    study_archive_write(study, upload)
    job = ArchiveJob.objects.create(
        kind=ArchiveJobKind.IMPORT, file_name="paper.zip", file_path=str(upload),
        status=ArchiveJobStatus.RUNNING, attempts=1,
        claimed_until=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    worker = start_worker(worker_env(tmp_path, DATABASE_URL=test_database_url()))
    try:
        wait_for(lambda: finished(job) and job.file_removed_at is not None, timeout=120,
                 what="the import to finish and its upload to go")  # fmt: skip
    finally:
        stop_worker(worker)
    assert job.status == ArchiveJobStatus.FINISHED and job.attempts == 2, job.error
    assert not upload.exists()
    assert study_tables(job.study) == tables
