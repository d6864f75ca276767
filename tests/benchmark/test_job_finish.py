"""One way every job ends (jobs.services.finish): only a running job, failed with a reason
or finished, its end time stamped; the reason is asked only once nothing is pending."""

import pytest

from benchmark.models import Run
from jobs.models import JobStatus
from jobs.services import finish
from jury.models import ScoringJob
from jury.services import juries, scoring
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    return launched_run(enriched_set(size=2))


@pytest.fixture
def job(run):
    played(run)
    job = scoring.scoring_launch(run=run, jury=juries.jury_demo_ensure())
    ScoringJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    return job


def test_it_waits_while_a_unit_is_pending_without_asking_why(job):
    asked = []
    pending = job.scores.filter(status="pending")
    ended = finish.job_finish_if_done(job, pending=pending, failure=lambda: asked.append(1) or "")
    assert not ended and asked == []
    assert ScoringJob.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_it_finishes_a_run_which_has_no_failure_reason(run):
    assert finish.job_finish(run)
    run.refresh_from_db()
    assert run.status == JobStatus.FINISHED and run.finished_at is not None


def test_it_refuses_a_reason_for_a_run(run):
    with pytest.raises(ValueError, match="does not fail as a whole"):
        finish.job_finish(run, reason="one conversation failed")
    assert Run.objects.get(pk=run.pk).status == JobStatus.RUNNING


def test_it_leaves_a_job_that_is_no_longer_running(run):
    Run.objects.filter(pk=run.pk).update(status=JobStatus.CANCELLED)
    assert not finish.job_finish(run)
    assert Run.objects.get(pk=run.pk).status == JobStatus.CANCELLED


def test_it_fails_a_job_with_the_reason(job):
    job.scores.update(status="error")
    assert finish.job_finish_if_done(job, pending=job.scores.filter(status="pending"),
                                   failure=lambda: "every judge call failed")  # fmt: skip
    job.refresh_from_db()
    assert (job.status, job.failure_reason) == (JobStatus.FAILED, "every judge call failed")
    assert job.finished_at is not None
