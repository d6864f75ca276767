"""Every job page says who plays its work, and says plainly when nobody does.

The pages read WorkerHeartbeat rows (written by real workers in tests/workers); here rows are
written directly, so every kind of job page is checked quickly.
"""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from benchmark.services import cases
from jobs.models import WorkerHeartbeat
from jobs.services.worker_heartbeats import job_key
from jury.models import JudgeScore
from tests.foundation.access_table import (
    annotation_objects,
    benchmark_objects,
    jury_objects,
    rubric_lab_objects,
)
from tests.support.text import squashed

pytestmark = pytest.mark.django_db

# (url name, object key, status that leaves the job's work waiting for a worker)
JOB_PAGES = [
    ("benchmark:run", "run", "running"),
    ("benchmark:set", "pending_set", "running"),
    ("jury:job", "scoring_job", "running"),
    ("rubric_lab:pipeline", "generation_job", "running"),
    ("rubric_lab:generation", "generation", "pending"),
    ("rubric_lab:score", "instance_score", "pending"),
    ("rubric_lab:sensitivity", "sensitivity_study", "running"),
    ("rubric_lab:coverage", "coverage_run", "running"),
    ("rubric_lab:refine", "refine_study", "running"),
    ("rubric_lab:ablation", "ablation_study", "running"),
    ("alignment:archive_job", "archive_job", "running"),
]
STALLED = "No worker is reporting"


@pytest.fixture
def jobs(users_by_role) -> dict:
    objects = benchmark_objects()
    objects |= jury_objects(objects["run"]) | rubric_lab_objects(objects)
    objects |= annotation_objects(objects, users_by_role)
    objects["pending_set"] = cases.benchmark_set_create(
        name="Waiting", distribution=cases.distribution_default_ensure(), size=2,
        sampler_seed=2, generator_model="offline/standard",
    )  # fmt: skip
    job = objects["scoring_job"]
    JudgeScore.objects.create(
        job=job, conversation=objects["conversation"], judge_index=0,
        rubric_version=job.rubric_versions.first(), judge_model="offline/standard",
    )  # fmt: skip
    return objects


def page(client, jobs, name, key, status) -> str:
    job = jobs[key]
    type(job).objects.filter(pk=job.pk).update(status=status)
    return squashed(client.get(reverse(name, args=[job.pk])))


def beat(**fields) -> WorkerHeartbeat:
    values = {
        "hostname": "worker-host", "pid": 4321, "process_started_at": timezone.now(),
        "mode": "embedded", "concurrency": 16, "last_seen_at": timezone.now(), **fields,
    }  # fmt: skip
    return WorkerHeartbeat.objects.create(**values)


@pytest.mark.parametrize(("name", "key", "status"), JOB_PAGES)
def test_a_job_page_warns_when_no_worker_has_ever_reported(
    researcher_client, jobs, name, key, status
):
    text = page(researcher_client, jobs, name, key, status)

    assert f"{STALLED}</strong> (none has reported yet)" in text
    assert "Nothing here moves until a worker runs." in text
    assert "manage.py demo" in text and "celery -A config worker --pool threads" in text


@pytest.mark.parametrize(("name", "key", "status"), JOB_PAGES)
def test_a_job_page_shows_the_last_heartbeat_of_a_reporting_worker(
    researcher_client, jobs, name, key, status
):
    beat(last_seen_at=timezone.now() - timedelta(seconds=5))

    text = page(researcher_client, jobs, name, key, status)

    assert STALLED not in text
    assert "Last worker heartbeat 5 s ago · 1 reporting:" in text
    assert "embedded-queue worker, pid 4321 on worker-host, 16 threads" in text


def test_a_worker_silent_past_the_threshold_is_not_reporting(researcher_client, jobs, settings):
    settings.WORKER_SILENT_SECONDS = 60
    beat(last_seen_at=timezone.now() - timedelta(minutes=7))

    text = page(researcher_client, jobs, "benchmark:run", "run", "running")

    assert "Not moving: no worker is reporting" in text
    assert f"{STALLED}</strong> (last seen 7 min ago)" in text
    assert "1 pending" in text


def test_a_worker_that_stopped_is_said_to_have_stopped(researcher_client, jobs):
    beat(stopped_at=timezone.now())

    text = page(researcher_client, jobs, "jury:job", "scoring_job", "running")

    assert f"{STALLED}</strong> (last seen 0 s ago, when it stopped)" in text


def test_a_worker_of_another_queue_does_not_count(researcher_client, jobs):
    beat(mode="redis")

    assert STALLED in page(researcher_client, jobs, "benchmark:run", "run", "running")


def test_an_inline_command_counts_only_for_the_job_it_plays(researcher_client, jobs):
    beat(mode="inline", serving=job_key(jobs["run"]), concurrency=2)

    run_page = page(researcher_client, jobs, "benchmark:run", "run", "running")
    job_page = page(researcher_client, jobs, "jury:job", "scoring_job", "running")

    assert STALLED not in run_page and "inline command, pid 4321" in run_page
    assert STALLED in job_page


def test_finished_work_is_not_called_stalled(researcher_client, jobs):
    jobs["run"].conversations.update(status="finished")

    text = page(researcher_client, jobs, "benchmark:run", "run", "finished")

    assert STALLED not in text and "No worker has reported yet." in text


def test_with_redis_the_page_says_how_to_start_a_worker_on_it(researcher_client, jobs, settings):
    settings.QUEUE_MODE = "redis"

    text = page(researcher_client, jobs, "benchmark:run", "run", "running")

    assert "with the site's <code>REDIS_URL</code> and <code>DATABASE_URL</code>" in text
