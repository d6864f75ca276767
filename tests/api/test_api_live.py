"""The API over real HTTP, as a researcher's script uses it: httpx against a live server, a
real worker process playing the work. An admin's read-write token launches a run of the
offline scripted agents, waits for it by polling, scores it and fetches the model table and
the judges' agreement table. (One test, ~30 s: the worker process starts Django once.)"""

import time

import httpx
import pytest

from accounts.models import Role
from accounts.tokens import token_create
from config import env
from tests.conftest import make_user
from tests.support.builders import enriched_set
from tests.support.workers import (
    project_app_sending_to,
    start_worker,
    stop_worker,
    test_database_url,
    worker_env,
)

# A script against a live site with a real worker, on the production database; both legs run
# every API route in process (tests/api).
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.leg("postgres"),
]


def poll(client: httpx.Client, url: str, done, *, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(url).raise_for_status().json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"timed out waiting on {url}: {body.get('status')}"
        time.sleep(0.5)


def test_a_script_launches_a_run_waits_scores_it_and_reads_the_tables(live_server, tmp_path):
    _, raw = token_create(user=make_user("adam", Role.ADMIN), name="script", scope="write",
                          days=7)  # fmt: skip
    case_set = enriched_set(size=2)
    transport = env.celery_transport(None, tmp_path / "queue")
    worker = start_worker(worker_env(tmp_path, DATABASE_URL=test_database_url()))
    headers = {"Authorization": f"Bearer {raw}"}
    try:
        with (
            project_app_sending_to(transport),
            httpx.Client(base_url=f"{live_server.url}/api/v1", headers=headers, timeout=60) as api,
        ):
            models = ["offline/careful", "offline/careless"]
            payload = {"name": "Scripted", "benchmark_set": case_set.pk, "models": models}
            run = api.post("/runs", json=payload)
            assert run.status_code == 201, run.text
            run_id = run.json()["id"]
            poll(api, f"/runs/{run_id}", lambda r: r["status"] == "finished")
            job = api.post("/scoring-jobs", json={"run": run_id}).raise_for_status().json()
            poll(api, f"/scoring-jobs/{job['id']}", lambda j: j["status"] == "finished")
            table = api.get(f"/scoring-jobs/{job['id']}/models").json()
            agreement = api.get(f"/scoring-jobs/{job['id']}/tables/agreement").json()
    finally:
        stop_worker(worker)
    assert {row["model"] for row in table["models"]} == {
        "offline/careful · baseline",
        "offline/careless · baseline",
    }
    assert all(
        row["n"] == 2
        and row["aggregate"]["low"] <= row["aggregate"]["estimate"] <= row["aggregate"]["high"]
        for row in table["models"]
    )
    assert agreement["rows"] and "rubric" in agreement["rows"][0]
