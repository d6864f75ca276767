"""Every kind of job declares its status, failure reason, creator, timestamps, concurrency,
cache flag, cost limit and ordering once (benchmark.models.Job), and the models still match
their migrations: no column was changed by sharing them."""

from io import StringIO

import pytest
from django.core.management import call_command

from alignment.models import ArchiveJob
from benchmark.models import Run
from jobs.models import Job
from jury.models import ScoringJob
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    GenerationJob,
    RefineStudy,
    SensitivityStudy,
)

JOBS = (Run, ScoringJob, GenerationJob, SensitivityStudy, CoverageRun, RefineStudy, AblationStudy)
SHARED = ("use_cache", "concurrency", "status", "created_by", "created_at", "finished_at")


@pytest.mark.parametrize("model", JOBS, ids=lambda model: model.__name__)
def test_every_job_is_a_job(model):
    assert issubclass(model, Job)
    assert model._meta.ordering == ["-created_at"]
    for name in (*SHARED, "cost_limit_usd", "stop_reason"):
        assert model._meta.get_field(name)


def test_a_run_has_no_failure_reason_of_its_own():
    """Its conversations fail, each with its reason; the run never had the column."""
    assert "failure_reason" not in {field.name for field in Run._meta.get_fields()}
    assert ScoringJob._meta.get_field("failure_reason")


def test_the_archive_job_is_not_a_costed_job():
    """Export and import of a study call no model: no concurrency, cache or cost limit."""
    assert not issubclass(ArchiveJob, Job)


@pytest.mark.django_db
def test_the_models_match_their_migrations():
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
