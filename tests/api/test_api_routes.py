"""The JSON API through Django's test client: each resource answers as its page does, with the
page's checks, and refuses what the page refuses."""

import pytest

from audit.models import AuditEvent
from benchmark.models import BenchmarkSet, Run
from jobs.models import JobStatus
from tests.support.builders import enriched_set

pytestmark = pytest.mark.django_db

API = "/api/v1"


def test_a_researcher_creates_a_case_set_from_the_shipped_distribution(researcher_client):
    response = researcher_client.post(
        f"{API}/case-sets", {"name": "From the API", "size": 3}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["size"] == 3 and body["progress"]["total"] == 3
    assert BenchmarkSet.objects.get(pk=body["id"]).generator_model == "offline/standard"
    status = researcher_client.get(f"{API}/case-sets/{body['id']}").json()
    assert status["status"] in {JobStatus.QUEUED, JobStatus.RUNNING}


def test_it_refuses_a_case_set_the_form_refuses_with_every_problem_named(researcher_client):
    response = researcher_client.post(
        f"{API}/case-sets",
        {"name": "Bad", "size": 0, "generator_model": "nobody/model"},
        content_type="application/json",
    )
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "size:" in detail and "generator_model:" in detail and "nobody" in detail


def test_only_admins_launch_runs_as_on_the_launch_page(researcher_client):
    benchmark_set = enriched_set(size=1)
    payload = {"name": "R", "benchmark_set": benchmark_set.pk, "models": ["offline/careful"]}
    response = researcher_client.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 403
    assert "admins" in response.json()["detail"]


def test_an_admin_launches_a_run_with_the_page_defaults_and_controls_it(admin_client_):
    benchmark_set = enriched_set(size=2)
    payload = {"name": "API run", "benchmark_set": benchmark_set.pk,
               "models": ["offline/careful", "offline/careless"]}  # fmt: skip
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert [a.label for a in run.agents.order_by("pk")] == [
        "offline/careful · baseline",
        "offline/careless · baseline",
    ]  # the page's default configuration
    assert run.conversations.count() == 4 and run.concurrency == 16
    paused = admin_client_.post(f"{API}/runs/{run.pk}/pause", content_type="application/json")
    assert paused.json()["status"] == JobStatus.PAUSED
    assert AuditEvent.objects.filter(action="run.paused", actor__username="adam").exists()
    resumed = admin_client_.post(
        f"{API}/runs/{run.pk}/resume", {"cost_limit_usd": "0"}, content_type="application/json"
    )
    assert resumed.status_code == 400 and "cost limit" in resumed.json()["detail"].lower()


def test_two_settings_of_one_model_are_two_rows_and_refused_settings_a_400(admin_client_):
    benchmark_set = enriched_set(size=1)
    models = ["openai/gpt-5.5@effort=high", "openai/gpt-5.5@effort=low"]
    payload = {"name": "Efforts", "benchmark_set": benchmark_set.pk, "models": models}
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert [a.model for a in run.agents.order_by("pk")] == models
    assert run.config["generation"] == {models[0]: {"effort": "high"}, models[1]: {"effort": "low"}}
    payload["models"] = ["openai/gpt-5.5@temperature=0"]
    refused = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert refused.status_code == 400
    assert "refuses a custom temperature" in refused.json()["detail"]


def test_it_refuses_a_run_with_an_unknown_offline_behaviour(admin_client_):
    benchmark_set = enriched_set(size=1)
    payload = {"name": "R", "benchmark_set": benchmark_set.pk, "models": ["offline/sloppy"]}
    response = admin_client_.post(f"{API}/runs", payload, content_type="application/json")
    assert response.status_code == 400
    assert "offline/careful" in response.json()["detail"]


def test_conversations_are_listed_with_the_run_page_filters_a_page_at_a_time(
    researcher_client, scored_run
):
    run, _ = scored_run
    url = f"{API}/runs/{run.pk}/conversations"
    page = researcher_client.get(url, {"page_size": 3}).json()
    pages = [page]
    while page["next"]:
        page = researcher_client.get(page["next"]).json()
        pages.append(page)
    ids = [c["id"] for page in pages for c in page["results"]]
    assert [len(page["results"]) for page in pages] == [3, 3, 2]
    assert len(set(ids)) == 8
    careless = run.agents.get(model="offline/careless")
    filtered = researcher_client.get(url, {"agent": careless.pk}).json()["results"]
    assert {c["model"] for c in filtered} == {"offline/careless"}


@pytest.mark.parametrize(
    "query",
    [
        {"status": "sleeping"},
        {"agent": "999"},
        {"cursor": "not-a-cursor"},
        {"page_size": "0"},
        {"page_size": "5000"},
        {"page_size": "many"},
    ],
)
def test_a_filter_or_cursor_that_cannot_be_used_answers_400_with_a_message(
    researcher_client, scored_run, query
):
    run, _ = scored_run
    response = researcher_client.get(f"{API}/runs/{run.pk}/conversations", query)
    assert response.status_code == 400
    assert response.json()["detail"]


def test_a_conversation_trace_is_its_line_of_the_run_export(researcher_client, scored_run):
    run, _ = scored_run
    conversation = run.conversations.first()
    body = researcher_client.get(f"{API}/conversations/{conversation.public_id}").json()
    assert body["conversation_id"] == str(conversation.public_id)
    assert [e["event_id"] for e in body["events"]] == list(
        conversation.events.order_by("seq").values_list("event_id", flat=True)
    )
    # Money is a number (the export's text "0.000123" becomes 0.000123), never a string.
    priced = [e["cost_usd"] for e in body["events"] if e["cost_usd"] is not None]
    assert priced and all(isinstance(cost, float) for cost in priced)
    assert {role["calls"] for role in body["usage"].values()} != {0}


def test_the_model_table_has_every_model_with_its_intervals(researcher_client, scored_run):
    _, job = scored_run
    status = researcher_client.get(f"{API}/scoring-jobs/{job.pk}").json()
    assert status["status"] == JobStatus.FINISHED and status["progress"]["pending"] == 0
    table = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/models").json()
    models = {row["model"]: row for row in table["models"]}
    assert set(models) == {"offline/careful · baseline", "offline/careless · baseline"}
    careful = models["offline/careful · baseline"]
    aggregate = careful["aggregate"]
    assert aggregate["low"] <= aggregate["estimate"] <= aggregate["high"] and careful["n"] == 4
    rates = [r["pass_rate"] for r in careful["rubrics"]]
    assert all(rate["low"] <= rate["estimate"] <= rate["high"] for rate in rates)


@pytest.mark.parametrize("table", ["spread", "outcomes", "agreement", "comparison"])
def test_every_report_table_is_offered_as_rows(researcher_client, scored_run, table):
    _, job = scored_run
    response = researcher_client.get(f"{API}/scoring-jobs/{job.pk}/tables/{table}")
    assert response.status_code == 200
    assert response.json()["rows"]


def test_judge_scores_are_filtered_and_paged(researcher_client, scored_run):
    _, job = scored_run
    url = f"{API}/scoring-jobs/{job.pk}/scores"
    scores = researcher_client.get(url, {"rubric": "clinical_safety", "judge": 1}).json()
    assert scores["results"]
    assert {(s["rubric"], s["judge_index"]) for s in scores["results"]} == {("clinical_safety", 1)}
    assert researcher_client.get(url, {"judge": 7}).status_code == 400


def test_a_researcher_scores_a_run_through_the_api(researcher_client, scored_run):
    run, _ = scored_run
    response = researcher_client.post(
        f"{API}/scoring-jobs", {"run": run.pk}, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["queued"] > 0
