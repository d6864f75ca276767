"""dry_run on the rubric lab's evaluation launches: the declared forecast, nothing made."""

import pytest

from api.schemas import ForecastOut
from audit.models import AuditEvent
from benchmark.models import ModelCall
from rubric_lab.models import CoverageRun, InstanceScore, NearMiss, RefineStudy, SensitivityStudy
from rubric_lab.services import sensitivity
from tests.jury.services.builders import played_run, world  # noqa: F401 - fixtures
from tests.rubric_lab.test_coverage_and_refine import rubric_job
from tests.rubric_lab.test_study_forecasts import PAIRWISE, played, sensitivity_launch

pytestmark = pytest.mark.django_db

API = "/api/v1/lab"
TABLES = (SensitivityStudy, NearMiss, CoverageRun, RefineStudy, InstanceScore, ModelCall)


@pytest.fixture
def lab_run(played_run):  # noqa: F811 - the jury tests' played run
    return played_run


@pytest.fixture
def pilot(lab_run):
    study = sensitivity_launch(lab_run, name="Pilot")()
    return played(study, sensitivity.near_miss_execute, study.pairs.all())


def counts() -> list[int]:
    return [table.objects.count() for table in (*TABLES, AuditEvent)]


def post(client, path: str, payload: dict):
    return client.post(f"{API}/{path}", payload, content_type="application/json")


def test_a_sensitivity_dry_run_answers_the_declared_forecast(admin_client_, pilot, lab_run):
    before = counts()
    payload = {**PAIRWISE, "run": lab_run.pk, "dry_run": True}

    response = post(admin_client_, "sensitivity-studies", payload)

    assert response.status_code == 200, response.content
    assert counts() == before  # the default jury it would make included
    body = ForecastOut.model_validate(response.json())
    assert [role.role for role in body.roles] == ["stage: perturb", "stage: pairwise judging"]
    assert body.roles[0].units == pilot.pairs.count() and body.roles[0].observed_units > 1
    assert body.roles[1].calls.low <= body.roles[1].calls.estimate <= body.roles[1].calls.high
    assert f"sensitivity study {pilot.pk}" in body.source


def test_a_dry_run_still_refuses_what_the_launch_refuses(admin_client_, lab_run):
    job = rubric_job(lab_run)
    payload = {"generation_job": job.pk, "judge_model": "offline/standard", "dry_run": True}

    response = post(admin_client_, "coverage-runs", payload)

    assert response.status_code == 400 and "expert criteria" in response.json()["detail"]
    assert not CoverageRun.objects.exists()


def test_refine_and_rubric_score_dry_runs_create_nothing(admin_client_, lab_run):
    job = rubric_job(lab_run)
    rubric = job.generations.get().rubric
    before = counts()

    refined = post(admin_client_, "refine-studies", {"generation_job": job.pk, "dry_run": True})
    scored = post(
        admin_client_,
        f"rubrics/{rubric.pk}/scores",
        {"conversation": str(rubric.conversation.public_id), "dry_run": True},
    )

    assert refined.status_code == 200 and scored.status_code == 200, scored.content
    assert counts() == before
    refine_roles = [r.role for r in ForecastOut.model_validate(refined.json()).roles]
    assert refine_roles[:3] == ["stage: critique", "stage: edit", "stage: independent judge"]
    assert refine_roles[3] == "stage: expert-criteria judge"  # the form's default judge
    (role,) = ForecastOut.model_validate(scored.json()).roles
    assert role.units == rubric.criteria.count() and role.calls is None  # nothing observed yet
