"""A client generated from the schema by a generic generator (openapi-python-client, no
warnings) drives a whole study against a live server: it launches a run and a scoring job,
reads the typed model table and a report table, creates a study from the scores, reads its
agreement and downloads the exports. The work itself is played in this process (the live
server shares its database), so the test needs no worker."""

import importlib
import json
import os
import subprocess
import sys

import httpx
import pytest

from accounts.models import Role
from accounts.tokens import token_create
from benchmark.models import Run
from jury.models import JudgeScore
from jury.services import scoring
from tests.conftest import make_user
from tests.support.builders import enriched_set, played

pytestmark = pytest.mark.django_db(transaction=True)
PACKAGE = "care_jury_api_client"


def _generated_client(schema: dict, folder) -> object:
    """Generate the client from `schema` in `folder` and import it; a warning fails the test."""
    pytest.importorskip("openapi_python_client")
    (folder / "schema.json").write_text(json.dumps(schema))
    environment = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    environment["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{environment['PATH']}"
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", "schema.json",
         "--meta", "none", "--output-path", PACKAGE],
        cwd=folder, env=environment, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "arning" not in said, said
    sys.path.insert(0, str(folder))
    return importlib.import_module(PACKAGE)


def _op(name: str):
    for area in ("benchmark", "jury", "studies", "sharing"):
        try:
            return importlib.import_module(f"{PACKAGE}.api.{area}.{name}")
        except ModuleNotFoundError:
            continue
    raise AssertionError(f"the client has no operation {name}")


def test_a_generated_client_drives_a_whole_study(live_server, tmp_path):
    _, raw = token_create(user=make_user("adam", Role.ADMIN), name="client", scope="write",
                          days=7)  # fmt: skip
    headers = {"Authorization": f"Bearer {raw}"}
    schema = httpx.get(f"{live_server.url}/api/v1/openapi.json", headers=headers, timeout=120)
    assert schema.status_code == 200
    client_package = _generated_client(schema.json(), tmp_path)
    try:
        models = importlib.import_module(f"{PACKAGE}.models")
        api = client_package.AuthenticatedClient(
            base_url=live_server.url, token=raw, timeout=httpx.Timeout(120)
        )
        case_set = enriched_set(size=4)
        sets = _op("case_set_list").sync(client=api)
        assert [each.id for each in sets.results] == [case_set.pk]

        run_in = models.RunIn(name="Generated", benchmark_set=case_set.pk,
                              models=["offline/careful", "offline/careless"])  # fmt: skip
        launched = _op("run_launch").sync_detailed(client=api, body=run_in)
        assert launched.status_code == 201, launched.content
        played(Run.objects.get(pk=launched.parsed.id))
        run = _op("run_detail").sync(client=api, run_id=launched.parsed.id)
        assert run.progress.finished == 8

        job = _op("scoring_job_launch").sync_detailed(
            client=api, body=models.ScoringJobIn(run=run.id)
        )
        assert job.status_code == 201, job.content
        # The judge calls were sent to the queue with their leases: play them as a worker would.
        sent = JudgeScore.objects.filter(job_id=job.parsed.id).values_list("pk", "lease_token")
        for score_id, lease_token in sent:
            scoring.judge_score_execute(score_id, lease_token or None)
        table = _op("model_table").sync(client=api, job_id=job.parsed.id)
        assert len(table.models) == 2
        assert all(isinstance(row.aggregate.estimate, float) for row in table.models)
        comparison = _op("report_table").sync(client=api, job_id=job.parsed.id, table="comparison")
        assert comparison.rows and "mean_difference" in comparison.columns

        study_in = models.StudyIn(
            project="Generated", name="Round 1", kind="calibration", round_number=1,
            scoring_jobs=[job.parsed.id], sample_size=4,
        )  # fmt: skip
        study = _op("study_new").sync_detailed(client=api, body=study_in)
        assert study.status_code == 201, study.content
        agreement = _op("study_agreement").sync(client=api, study_id=study.parsed.id)
        assert agreement.study == study.parsed.id
        # Nested objects are typed too: a study's progress, the leaderboard's intervals.
        detail = _op("study_detail").sync(client=api, study_id=study.parsed.id)
        assert detail.progress.items == 4 and detail.progress.tracks[0].tally.submitted == 0
        board = _op("leaderboard_table").sync(client=api)
        assert board.entries and isinstance(board.entries[0].aggregate.estimate, float)
        export = _op("study_annotations").sync_detailed(
            client=api, study_id=study.parsed.id, fmt="csv"
        )
        assert export.status_code == 200 and export.content
        scores = _op("judge_scores_export").sync_detailed(
            client=api, job_id=job.parsed.id, fmt="csv"
        )
        assert scores.status_code == 200 and b"judge_model" in scores.content
        refused = _op("run_list").sync_detailed(client=api, status="sleeping")
        assert refused.status_code == 400
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith(PACKAGE)]:
            del sys.modules[name]
