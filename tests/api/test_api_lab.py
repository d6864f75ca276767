"""The rubric lab over the API: imports, generation jobs, sensitivity, coverage, refinement
and ablations, launched through the lab pages' forms, their units executed in-process with the
offline scripted provider (as a worker would), their results read as typed tables and files."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import JobStatus
from rubric_lab.models import ExpertCriterion, GenerationJob, InstanceScore, SensitivityStudy
from rubric_lab.services import (
    coverage,
    generation_batches,
    pipeline,
    refine,
    sensitivity,
    study_batches,
)
from rubric_lab.services.instance_scoring import instance_score_execute
from tests.jury.services.builders import played_run, world  # noqa: F401 - shared fixtures
from tests.rubric_lab.healthbench_rows import MULTI_TURN, SINGLE_TURN, jsonl
from tests.support.api import API

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"


@pytest.fixture
def lab_run(played_run):  # noqa: F811 - the jury tests' played run, built once a module
    return played_run


def _post(client, path: str, body: dict):
    return client.post(API + path, body, content_type="application/json")


def _problem(response, status: int = 400) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith(PROBLEM)
    return response.json()


def _locations(response, status: int = 400) -> list[str]:
    return [error["location"] for error in _problem(response, status)["errors"]]


def _generated(client, run, **options) -> dict:
    """A generation job launched over the API for one reference, its unit run in-process."""
    body = {"run": run.pk, "limit": 1, "generator_model": "offline/standard", "judge_model": ""}
    response = _post(client, "/lab/generation-jobs", body | options)
    assert response.status_code == 201, response.content
    job = response.json()
    run_units(GenerationJob.objects.get(pk=job["id"]).generations, pipeline.generation_execute)
    return job


def run_units(rows, execute) -> None:
    """Execute each unit the launch sent, with its lease, as a worker would."""
    for pk, token in rows.values_list("pk", "lease_token"):
        execute(pk, token or None)


# --- imports -----------------------------------------------------------------------------------


def test_a_healthbench_file_becomes_a_run_with_its_criteria_listed(researcher_client):
    upload = SimpleUploadedFile("hb.jsonl", jsonl(SINGLE_TURN, MULTI_TURN).encode())
    response = researcher_client.post(
        API + "/lab/imports/healthbench", {"file": upload, "name": "Pilot"}
    )
    assert response.status_code == 201, response.content
    imported = response.json()
    assert imported["conversations"] == 2 and "Pilot" in imported["summary"]
    made = imported["criteria_import"]
    listed = researcher_client.get(API + "/lab/imports").json()["results"]
    assert [row["id"] for row in listed] == [made["id"]]
    detail = researcher_client.get(f"{API}/lab/imports/{made['id']}").json()
    assert detail["criteria"] == made["criteria"] == ExpertCriterion.objects.count()
    criteria = researcher_client.get(f"{API}/lab/imports/{made['id']}/criteria").json()
    first = criteria["results"][0]
    assert first["conversation"] and isinstance(first["weight"], int) and first["axis"]
    assert researcher_client.get(API + "/runs/" + str(imported["run"])).status_code == 200


def test_a_bad_healthbench_file_names_every_line_and_saves_nothing(researcher_client):
    bad = jsonl(SINGLE_TURN, {**MULTI_TURN, "prompt": []}) + "not json\n"
    upload = SimpleUploadedFile("bad.jsonl", bad.encode())
    response = researcher_client.post(API + "/lab/imports/healthbench", {"file": upload})
    body = _problem(response)
    assert "nothing was saved" in body["detail"]
    assert len(body["errors"]) >= 2 and {e["location"] for e in body["errors"]} == {"file"}
    assert any("line 3" in error["message"] for error in body["errors"])
    assert not ExpertCriterion.objects.exists()


def test_an_expert_criteria_upload_refuses_bad_rows_and_saves_good_files(
    researcher_client, lab_run
):
    benchmark_set = lab_run.benchmark_set.pk
    bad = SimpleUploadedFile("gold.csv", b"case,criterion,weight\n0,Calls 911,5\n99,Unknown,3\n")
    refused = researcher_client.post(
        API + "/lab/imports/criteria", {"file": bad, "benchmark_set": benchmark_set}
    )
    assert [e["message"].split(":")[0] for e in _problem(refused)["errors"]] == ["row 3"]
    good = SimpleUploadedFile("gold.csv", b"case,criterion,weight\n0,Calls 911,5\n")
    saved = researcher_client.post(
        API + "/lab/imports/criteria", {"file": good, "benchmark_set": benchmark_set}
    )
    assert saved.status_code == 201 and saved.json()["criteria"] == 1
    missing = researcher_client.post(API + "/lab/imports/criteria", {"benchmark_set": "x"})
    assert _problem(missing)["errors"]


# --- generation --------------------------------------------------------------------------------


def test_a_generation_job_is_launched_polled_and_its_rubrics_read(researcher_client, lab_run):
    job = _generated(
        researcher_client, lab_run, method="pipeline", skip_facts=True,
        stage_sampling={"audit": {"temperature": 0.2}},
    )  # fmt: skip
    assert job["progress"] == {
        "total": 1, "finished": 0, "failed": 0, "done": 0, "percent": 0, "cost": 0.0
    }  # fmt: skip
    assert job["ablations"] == ["facts"] and job["sampling"]["audit"]["temperature"] == 0.2
    detail = researcher_client.get(f"{API}/lab/generation-jobs/{job['id']}").json()
    assert detail["progress"]["done"] == 1 and detail["status"] == JobStatus.FINISHED
    assert detail["model_costs"][0]["model"] == "offline/standard"
    listed = researcher_client.get(API + "/lab/generation-jobs", {"run": lab_run.pk}).json()
    assert listed["results"][0]["progress"]["percent"] == 100
    (generation,) = researcher_client.get(f"{API}/lab/generation-jobs/{job['id']}/rubrics").json()[
        "results"
    ]
    rubric = generation["rubric"]
    assert generation["status"] == "finished" and rubric["criteria"]
    assert rubric["positive_total"] == sum(
        c["weight"] for c in rubric["criteria"] if c["weight"] > 0
    )
    one = researcher_client.get(f"{API}/lab/rubrics/{rubric['id']}").json()
    assert one["job"] == job["id"] and one["facts"] and one["criteria"] == rubric["criteria"]
    lines = researcher_client.get(f"{API}/lab/generation-jobs/{job['id']}/rubrics.jsonl")
    assert lines["Content-Disposition"].startswith("attachment")
    assert (
        json.loads(b"".join(lines.streaming_content if lines.streaming else [lines.content]))[
            "rubric"
        ]
        == rubric["id"]
    )


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"generator_model": "offline/sloppy"}, "body.generator_model"),
        ({"top_k": 0}, "body.top_k"),
        ({"stage_sampling": {"lunch": {"temperature": 0.1}}}, "body.stage_sampling"),
        ({"stage_sampling": {"audit": {"heat": 0.1}}}, "body.stage_sampling.audit"),
    ],
)
def test_a_generation_launch_the_form_refuses_is_a_400_naming_the_field(
    researcher_client, lab_run, options, where
):
    body = {"run": lab_run.pk, "generator_model": "offline/standard"} | options
    assert _locations(_post(researcher_client, "/lab/generation-jobs", body)) == [where]
    assert not GenerationJob.objects.exists()


def test_a_generation_job_launched_in_batch_mode_lists_its_batches(researcher_client, lab_run):
    body = {"run": lab_run.pk, "limit": 1, "judge_model": "", "batch": True}
    body["batch_resend_live"] = True
    response = _post(researcher_client, "/lab/generation-jobs", body)
    assert response.status_code == 201, response.json()
    job = response.json()
    assert job["batch"] and job["batch_resend_live"] and job["batches"] == []
    stored = GenerationJob.objects.get(pk=job["id"])
    assert stored.batch and stored.batch_resend_live
    generation_batches.generation_batch_poll(stored)  # the watch's first look
    shown = researcher_client.get(f"{API}/lab/generation-jobs/{job['id']}").json()
    [batch] = shown["batches"]
    assert batch["model"] == "offline/standard" and batch["requests"] == 1


def test_a_batch_launch_naming_no_judge_scores_nothing_instead_of_the_pages_default_judge(
    researcher_client, lab_run
):
    body = {"run": lab_run.pk, "limit": 1, "batch": True}
    response = _post(researcher_client, "/lab/generation-jobs", body)
    assert response.status_code == 201, response.json()
    assert response.json()["judge_model"] == ""
    live = _post(researcher_client, "/lab/generation-jobs", {"run": lab_run.pk, "limit": 1})
    assert live.json()["judge_model"] == "offline/standard"  # a live launch keeps the default


def test_a_batch_launch_the_pipeline_cannot_run_is_a_400_with_the_reason(
    researcher_client, lab_run
):
    body = {"run": lab_run.pk, "limit": 1, "judge_model": "offline/flaky", "batch": True}
    response = _post(researcher_client, "/lab/generation-jobs", body)
    assert "leave the judge blank" in _problem(response)["detail"]
    assert not GenerationJob.objects.exists()


def test_a_reply_is_scored_with_an_instance_rubric_criterion_by_criterion(
    researcher_client, lab_run
):
    job = _generated(researcher_client, lab_run)
    (generation,) = researcher_client.get(f"{API}/lab/generation-jobs/{job['id']}/rubrics").json()[
        "results"
    ]
    rubric = generation["rubric"]
    path = f"/lab/rubrics/{rubric['id']}/scores"
    body = {"conversation": rubric["conversation"], "judge_model": "offline/standard"}
    response = _post(researcher_client, path, body)
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "pending"
    run_units(InstanceScore.objects.filter(pk=response.json()["id"]), instance_score_execute)
    score = researcher_client.get(f"{API}/lab/instance-scores/{response.json()['id']}").json()
    assert score["status"] == "valid" and len(score["decisions"]) == len(rubric["criteria"])
    assert score["weighted_sum"] == sum(d["weight"] for d in score["decisions"] if d["met"])
    other_case = lab_run.conversations.exclude(entry__index=generation["case"]).first()
    refused = _post(researcher_client, path, {"conversation": str(other_case.public_id)})
    assert _locations(refused) == ["body.conversation"]


def test_the_knowledge_base_is_listed_searched_and_extended(researcher_client):
    listed = researcher_client.get(API + "/lab/knowledge", {"page_size": 500}).json()
    assert "rf-chest-pain" in {row["passage_id"] for row in listed["results"]}
    found = researcher_client.get(
        API + "/lab/knowledge/search", {"q": "suicide 988 crisis", "retriever": "bm25"}
    ).json()
    assert found[0]["passage_id"] == "mh-crisis-resources" and found[0]["score"] > 0
    unknown = researcher_client.get(API + "/lab/knowledge/search", {"q": "x", "retriever": "llm"})
    assert _locations(unknown) == ["query.retriever"]
    bad = SimpleUploadedFile(
        "bad.csv", b"passage_id,topic,title,text,source,source_version\nBad Id,t,,short,,1\n"
    )
    body = _problem(researcher_client.post(API + "/lab/knowledge", {"file": bad}))
    assert "row 1: title is missing or empty" in [e["message"] for e in body["errors"]]
    good = SimpleUploadedFile(
        "good.csv",
        b"passage_id,topic,title,text,source,source_version\n"
        b"extra-sunburn,skin,Sunburn care,Cool the skin and drink water; see a doctor if it "
        b"blisters widely.,Local guide,2026\n",
    )
    saved = researcher_client.post(API + "/lab/knowledge", {"file": good})
    assert saved.status_code == 201 and saved.json()["passages"] == 1


# --- sensitivity -------------------------------------------------------------------------------


def test_a_sensitivity_study_runs_and_its_results_are_typed_rows_and_files(
    researcher_client, lab_run
):
    body = {"run": lab_run.pk, "setup": "generic", "reference_model": "offline/careful",
            "perturbations": ["claim_without_tool_call", "swap_dose"], "max_cases": 2}  # fmt: skip
    response = _post(researcher_client, "/lab/sensitivity-studies", body)
    assert response.status_code == 201, response.content
    launched = response.json()
    assert launched["progress"]["pending"] == launched["progress"]["total"] > 0
    assert launched["perturbations"] == ["claim_without_tool_call", "swap_dose"]
    study = SensitivityStudy.objects.get(pk=launched["id"])
    run_units(study.pairs, sensitivity.near_miss_execute)
    path = f"{API}/lab/sensitivity-studies/{study.pk}"
    detail = researcher_client.get(path).json()
    assert detail["progress"]["percent"] == 100 and detail["status"] == JobStatus.FINISHED
    table = researcher_client.get(path + "/results").json()
    assert "auroc" in table["columns"] and "auroc_low" not in table["columns"]
    pooled = table["rows"][-1]
    assert pooled["perturbation"] == "all"
    assert set(pooled["auroc"]) == {"estimate", "low", "high"}
    assert isinstance(pooled["auroc"]["estimate"], float)
    tex = researcher_client.get(path + "/results.tex")
    assert tex.status_code == 200 and b"\\end{tabular}" in tex.content
    assert researcher_client.get(path + "/results.xls").status_code == 404
    pairs = researcher_client.get(path + "/pairs.csv")
    assert pairs.status_code == 200 and pairs.content.startswith(b"study,")
    retried = _post(researcher_client, f"/lab/sensitivity-studies/{study.pk}/retry", {})
    assert retried.status_code == 200 and retried.json()["id"] == study.pk


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"setup": "instance"}, "body.generation_job"),
        ({"setup": "generic", "perturbations": ["melt"]}, "body.perturbations"),
        ({"setup": "generic", "max_cases": 0}, "body.max_cases"),
    ],
)
def test_a_sensitivity_launch_the_form_refuses_is_a_400(researcher_client, lab_run, options, where):
    body = {"run": lab_run.pk} | options
    assert _locations(_post(researcher_client, "/lab/sensitivity-studies", body)) == [where]


def test_a_study_the_service_refuses_is_a_400_with_its_reason(researcher_client, lab_run):
    body = {"run": lab_run.pk, "setup": "generic", "reference_model": "offline/nobody"}
    body = _problem(_post(researcher_client, "/lab/sensitivity-studies", body))
    assert "offline/nobody" in body["detail"]


def test_a_sensitivity_study_launched_in_batch_mode_lists_its_batches(researcher_client, lab_run):
    body = {"run": lab_run.pk, "setup": "pairwise", "judge_model": "offline/standard",
            "reference_model": "offline/careful", "perturbations": ["claim_without_tool_call"],
            "max_cases": 1, "batch": True, "batch_resend_live": True}  # fmt: skip
    response = _post(researcher_client, "/lab/sensitivity-studies", body)
    assert response.status_code == 201, response.json()
    launched = response.json()
    assert launched["batch"] and launched["batch_resend_live"] and launched["batches"] == []
    study = SensitivityStudy.objects.get(pk=launched["id"])
    study_batches.batch_poll(sensitivity.BATCHES, study)  # the watch's first look
    shown = researcher_client.get(f"{API}/lab/sensitivity-studies/{study.pk}").json()
    [batch] = shown["batches"]
    assert batch["model"] == "offline/standard" and batch["requests"] == 1


def test_a_sensitivity_batch_launch_naming_a_live_only_model_is_a_400(researcher_client, lab_run):
    body = {"run": lab_run.pk, "setup": "pairwise", "judge_model": "openai-compatible/local",
            "batch": True}  # fmt: skip
    response = _post(researcher_client, "/lab/sensitivity-studies", body)
    assert "has no batch API" in _problem(response)["detail"]
    assert not SensitivityStudy.objects.exists()


def test_a_refine_study_launched_in_batch_mode_lists_its_batches(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run, reference_model=None)
    body = {"generation_job": job["id"], "max_cases": 1, "batch": True, "batch_resend_live": True}
    response = _post(researcher_client, "/lab/refine-studies", body)
    assert response.status_code == 201, response.content
    launched = response.json()
    assert launched["batch"] and launched["batch_resend_live"] and launched["batches"] == []
    study = refine.RefineStudy.objects.get(pk=launched["id"])
    study_batches.batch_poll(refine.BATCHES, study)  # the watch's first look
    shown = researcher_client.get(f"{API}/lab/refine-studies/{study.pk}").json()
    [batch] = shown["batches"]
    assert batch["requests"] == 2  # the critiques of its rubric arm and its self-critique arm


def test_a_refine_batch_launch_naming_a_live_only_model_is_a_400(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run, reference_model=None)
    body = {"generation_job": job["id"], "editor_model": "openai-compatible/local", "batch": True}
    response = _post(researcher_client, "/lab/refine-studies", body)
    assert "openai-compatible/local has no batch API" in _problem(response)["detail"]
    assert not refine.RefineStudy.objects.exists()


# --- coverage and refinement -------------------------------------------------------------------


def test_a_coverage_run_launched_in_batch_mode_lists_its_batches(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run, reference_model=None)
    generation = GenerationJob.objects.get(pk=job["id"]).generations.get()
    criteria = [{"case": generation.conversation.entry.index, "criterion": "Calls 911"}]
    coverage.expert_criteria_upload(
        benchmark_set=lab_run.benchmark_set, filename="gold.json", content=json.dumps(criteria)
    )
    body = {"generation_job": job["id"], "batch": True, "batch_resend_live": True}
    response = _post(researcher_client, "/lab/coverage-runs", body)
    assert response.status_code == 201, response.content
    launched = response.json()
    assert launched["batch"] and launched["batch_resend_live"] and launched["batches"] == []
    run = coverage.CoverageRun.objects.get(pk=launched["id"])
    study_batches.batch_poll(coverage.BATCHES, run)  # the watch's first look
    shown = researcher_client.get(f"{API}/lab/coverage-runs/{run.pk}").json()
    [batch] = shown["batches"]
    assert batch["requests"] == 1  # the decomposition of its one case


def test_coverage_and_refinement_run_on_a_generation_job(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run, reference_model=None)
    generation = GenerationJob.objects.get(pk=job["id"]).generations.get()
    criteria = [
        {"case": generation.conversation.entry.index, "criterion": "Tells them to call 911"}
    ]
    coverage.expert_criteria_upload(
        benchmark_set=lab_run.benchmark_set, filename="gold.json", content=json.dumps(criteria)
    )
    response = _post(researcher_client, "/lab/coverage-runs", {"generation_job": job["id"]})
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    run_units(coverage.CoverageRun.objects.get(pk=run_id).cases, coverage.coverage_case_execute)
    path = f"{API}/lab/coverage-runs/{run_id}"
    assert researcher_client.get(path).json()["progress"]["counts"] == {"done": 1}
    table = researcher_client.get(path + "/results").json()
    micro = next(row for row in table["rows"] if row["case"] == "all (micro)")
    assert set(micro["recall"]) == {"estimate", "low", "high"} and micro["prompt_id"] is None
    compared = researcher_client.get(f"{path}/compare/{run_id}").json()
    assert compared["rows"][0]["difference"]["estimate"] == 0
    assert researcher_client.get(f"{path}/compare/{run_id}.md").status_code == 200
    assert researcher_client.get(path + "/results.csv").status_code == 200
    assert researcher_client.get(path + "/cases.jsonl").status_code == 200

    body = {"generation_job": job["id"], "max_cases": 1}
    response = _post(researcher_client, "/lab/refine-studies", body)
    assert response.status_code == 201, response.content
    study = refine.RefineStudy.objects.get(pk=response.json()["id"])
    run_units(study.refinements, refine.refinement_execute)
    path = f"{API}/lab/refine-studies/{study.pk}"
    assert researcher_client.get(path).json()["progress"]["pending"] == 0
    rows = researcher_client.get(path + "/results").json()["rows"]
    assert {row["arm"] for row in rows} >= {"rubric", "self"}
    assert all(set(row["mean_gain"]) == {"estimate", "low", "high"} for row in rows)
    assert researcher_client.get(path + "/results.tex").status_code == 200
    assert researcher_client.get(path + "/refinements.csv").status_code == 200


def test_coverage_of_a_job_without_expert_criteria_is_refused(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run)
    body = _problem(_post(researcher_client, "/lab/coverage-runs", {"generation_job": job["id"]}))
    assert "expert criteria" in body["detail"]


# --- ablations and resuming ----------------------------------------------------------------------


def test_an_ablation_study_is_launched_with_a_variant_each(researcher_client, lab_run):
    body = {"run": lab_run.pk, "reference_model": "offline/careful", "max_cases": 1}
    response = _post(researcher_client, "/lab/ablation-studies", body)
    assert response.status_code == 201, response.content
    study = response.json()
    assert len(study["arms"]) == 6 and {arm["rubrics"] for arm in study["arms"]} == {0}
    assert all(arm["recall"] is None and arm["versus_full"] is None for arm in study["arms"])
    listed = researcher_client.get(API + "/lab/ablation-studies", {"status": "running"}).json()
    assert [row["id"] for row in listed["results"]] == [study["id"]]
    detail = researcher_client.get(f"{API}/lab/ablation-studies/{study['id']}").json()
    assert detail["arms"] == study["arms"] and not detail["batch"]


def test_a_batch_ablation_launches_its_rubric_generations_in_batch_mode(researcher_client, lab_run):
    body = {"run": lab_run.pk, "reference_model": "offline/careful", "max_cases": 1,
            "batch": True, "batch_resend_live": True}  # fmt: skip
    response = _post(researcher_client, "/lab/ablation-studies", body)
    assert response.status_code == 201, response.content
    study = response.json()
    assert study["batch"] and study["batch_resend_live"]
    jobs = GenerationJob.objects.filter(pk__in=[arm["generation_job"] for arm in study["arms"]])
    assert jobs.count() == 6
    assert {(job.batch, job.batch_resend_live) for job in jobs} == {(True, True)}


def test_only_a_paused_lab_job_resumes(researcher_client, lab_run):
    job = _generated(researcher_client, lab_run)
    path = f"/lab/jobs/generation/{job['id']}/resume"
    assert "only a paused job" in _problem(_post(researcher_client, path, {}))["detail"]
    GenerationJob.objects.filter(pk=job["id"]).update(status=JobStatus.PAUSED)
    resumed = _post(researcher_client, path, {"cost_limit_usd": "5"})
    assert resumed.status_code == 200, resumed.content
    assert resumed.json()["cost_limit_usd"] == 5.0
    assert _post(researcher_client, f"/lab/jobs/nonsense/{job['id']}/resume", {}).status_code == 404


# --- access --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/lab/imports", "/lab/generation-jobs", "/lab/sensitivity-studies", "/lab/coverage-runs",
     "/lab/refine-studies", "/lab/ablation-studies"],
)  # fmt: skip
def test_annotators_are_refused_every_lab_route(client, annotator, path):
    client.force_login(annotator)
    assert "annotators cannot use it" in _problem(client.get(API + path), 403)["detail"]
    _problem(_post(client, path.replace("/lab/imports", "/lab/imports/criteria"), {}), 403)


@pytest.mark.parametrize("path", ["/lab/sensitivity-studies", "/lab/coverage-runs"])
def test_an_unknown_filter_value_or_parameter_is_a_400(researcher_client, path):
    assert _locations(researcher_client.get(API + path, {"status": "asleep"})) == ["query.status"]
    assert _locations(researcher_client.get(API + path, {"colour": "red"})) == ["query.colour"]
