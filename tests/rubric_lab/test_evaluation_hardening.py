"""What the review of the evaluation side hardened: instance-rubric judging failures stored
with their reason, "does not apply" kept apart from what a copy changed, launch forms that
name each bad field and keep the rest, coverage and refine exports, and list pages whose query
count does not grow with their rows."""

import re
from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jury.services import juries
from llm.engine.chat import ProviderError
from llm.engine.providers.offline import OfflineProvider
from rubric_lab.engine.axes import common_axis
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    ExpertCriterion,
    GenerationJob,
    JudgeSetup,
    NearMissStatus,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import coverage, evaluation_work, pipeline, refine, sensitivity
from tests.support.latex import latex_floats

pytestmark = pytest.mark.django_db


class InstanceJudgeBroken:
    """The offline provider, except the instance-rubric judge answers prose or fails."""

    def __init__(self, *, error: ProviderError | None = None):
        self.offline = OfflineProvider("standard")
        self.error = error

    def chat(self, request):
        response = self.offline.chat(request)
        if request.purpose != "rubric_judge":
            return response
        if self.error is not None:
            raise self.error
        return replace(response, text="I would rather not say whether it was met.")


@pytest.fixture
def rubric_job(played_run):
    conversation = played_run.conversations.filter(run_agent__model="offline/careful").first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/standard", run=played_run
    )
    pipeline.generation_execute(job.generations.get().pk)
    return job


def instance_study(played_run, job):
    return sensitivity.study_launch(
        run=played_run, setup=JudgeSetup.INSTANCE, generation_job=job,
        judge_model="offline/standard", perturber_model="offline/surgical",
        reference_model="offline/careful", perturbations=["claim_without_tool_call"],
    )  # fmt: skip


def run_with(monkeypatch, study, client):
    monkeypatch.setattr(evaluation_work, "model_router", lambda use_cache: client)
    for pair_id in study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    study.refresh_from_db()


def test_an_unusable_instance_judge_answer_fails_the_pair_with_its_reason(
    played_run, rubric_job, monkeypatch
):
    study = instance_study(played_run, rubric_job)
    run_with(monkeypatch, study, InstanceJudgeBroken())

    pair = study.pairs.get()
    assert pair.status == NearMissStatus.FAILED and pair.failure_stage == "score"
    assert pair.failure_reason.startswith("instance rubric, reference: criterion 1:")
    assert "I would rather not say" in pair.raw_output
    assert pair.reference_score is None and pair.perturbed_score is None
    assert pair.diff  # the copy was made; only the scoring failed


def test_a_provider_fault_of_the_instance_judge_fails_the_pair_with_its_reason(
    played_run, rubric_job, monkeypatch
):
    study = instance_study(played_run, rubric_job)
    down = ProviderError("upstream answered 503", kind="server", status=503)
    run_with(monkeypatch, study, InstanceJudgeBroken(error=down))

    pair = study.pairs.get()
    assert pair.status == NearMissStatus.FAILED
    assert "provider error (server)" in pair.failure_reason and "503" in pair.failure_reason
    assert study.status == "failed" and "503" in study.failure_reason


def test_a_type_that_does_not_apply_keeps_its_reason_apart_from_the_description(played_run):
    study = sensitivity.study_launch(
        run=played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/standard",
        perturber_model="offline/surgical", reference_model="offline/careful",
        perturbations=["drop_crisis_resource"],
    )  # fmt: skip
    for pair_id in study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)

    skipped = study.pairs.filter(status=NearMissStatus.NOT_APPLICABLE)
    assert skipped.exists()
    for pair in skipped:
        assert pair.not_applicable_reason and pair.description == ""
    # A type with no scored pair exports blank measures and whole counts, never "nan".
    markdown = sensitivity.study_export(study, "md")
    assert "nan" not in markdown and f"| {skipped.count()} |" in markdown


SENSITIVITY_FORM = {
    "name": "Kept name", "reference_model": "offline/careful", "setup": "instance",
    "judge_model": "offline/standard", "perturber_model": "offline/surgical",
    "perturbations": ["swap_dose"], "max_cases": 0, "seed": 3,
}  # fmt: skip


def test_a_bad_sensitivity_launch_names_each_field_and_keeps_what_was_typed(
    researcher_client, played_run
):
    response = researcher_client.post(
        reverse("rubric_lab:sensitivity_list"), {**SENSITIVITY_FORM, "run": played_run.pk}
    )
    form = response.context["form"]
    assert set(form.errors) == {"generation_job", "max_cases"}
    assert "needs a generation job" in form.errors["generation_job"][0]
    html = response.content.decode()
    assert 'value="Kept name"' in html and 'value="3"' in html
    assert re.search(r'value="swap_dose"[^>]*checked', html)
    assert not re.search(r'value="drop_crisis_resource"[^>]*checked', html)
    assert not SensitivityStudy.objects.exists()


@pytest.mark.parametrize(
    ("setup", "extra", "field", "message"),
    [
        ("generic", {}, "jury", "needs a jury"),
        ("pairwise", {"judge_model": ""}, "judge_model", "needs a judge model"),
        ("pairwise", {"judge_model": "offline/nobody"}, "judge_model", "unknown offline"),
        ("pairwise", {"perturber_model": "nonsense"}, "perturber_model", ""),
    ],
)
def test_each_setup_asks_for_its_own_fields(
    researcher_client, played_run, setup, extra, field, message
):
    data = {**SENSITIVITY_FORM, "run": played_run.pk, "setup": setup, "max_cases": 2, **extra}
    response = researcher_client.post(reverse("rubric_lab:sensitivity_list"), data)
    errors = response.context["form"].errors
    assert field in errors and message in errors[field][0]
    assert not SensitivityStudy.objects.exists()


def test_a_refusal_by_the_service_is_shown_above_the_kept_form(researcher_client, played_run):
    data = {**SENSITIVITY_FORM, "run": played_run.pk, "setup": "generic", "max_cases": 2,
            "jury": juries.jury_demo_ensure().pk, "reference_model": "offline/nobody"}  # fmt: skip
    response = researcher_client.post(reverse("rubric_lab:sensitivity_list"), data)
    assert (
        "no finished conversation by offline/nobody"
        in response.context["form"].non_field_errors()[0]
    )
    assert 'value="offline/nobody"' in response.content.decode()


@pytest.mark.parametrize(
    ("url", "data", "field", "model"),
    [
        ("rubric_lab:coverage_list", {"action": "launch", "judge_model": "offline/standard"},
         "generation_job", CoverageRun),
        ("rubric_lab:refine_list", {"evaluator_model": "offline/standard",
                                    "editor_model": "offline/standard",
                                    "judge_model": "offline/nobody", "max_cases": 5},
         "judge_model", RefineStudy),
        ("rubric_lab:ablation_list", {"generator_model": "offline/standard",
                                      "judge_model": "offline/standard",
                                      "perturber_model": "offline/surgical", "max_cases": 9999},
         "max_cases", AblationStudy),
    ],
)  # fmt: skip
def test_other_launch_forms_name_the_bad_field_and_start_nothing(
    researcher_client, played_run, rubric_job, url, data, field, model
):
    if "generation_job" not in data and url != "rubric_lab:coverage_list":
        data = {**data, "generation_job": rubric_job.pk}
    data = {**data, "run": played_run.pk}
    response = researcher_client.post(reverse(url), data)
    form = response.context["launch_form" if "coverage" in url else "form"]
    assert field in form.errors
    assert not model.objects.exists()


def test_coverage_results_export_per_case_and_overall(played_run, rubric_job):
    rubric = rubric_job.generations.get().rubric
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.csv",
        content=f"case,criterion\n{rubric.conversation.entry.index},Advise calling 911 for "
        "chest pain.\n",
    )  # fmt: skip
    run = coverage.coverage_launch(generation_job=rubric_job, judge_model="offline/standard")
    for case_id in run.cases.values_list("pk", flat=True):
        coverage.coverage_case_execute(case_id)

    table = coverage.coverage_table(run)
    # Then one row per axis: the generated criteria's axes in HealthBench's names, and the
    # expert criterion's (it named none) last.
    axes = [*sorted({common_axis(c.axis) for c in rubric.criteria.all()}), "(none)"]
    assert list(table["case"]) == [
        rubric.conversation.entry.index, "all (micro)", "mean of 1 cases (macro)",
        *(f"axis: {axis}" for axis in axes),
    ]  # fmt: skip
    case, micro = table.iloc[0], table.iloc[1]
    assert case["recall"] == case["entailed"] / case["constraints"]
    assert micro["f1"] == pytest.approx(case["f1"])
    csv = coverage.coverage_export(run, "csv")
    assert csv.splitlines()[0] == (
        "case,prompt_id,condition,theme,rubric,constraints,entailed,generated,matched,recall,"
        "recall_low,recall_high,precision,precision_low,precision_high,f1,f1_low,f1_high"
    )
    (latex,) = latex_floats(coverage.coverage_export(run, "tex"))
    assert latex.label == f"tab:coverage-{run.pk}" and run.name in latex.caption
    assert "nan" not in csv and csv.splitlines()[3].startswith("mean of 1 cases (macro),,,,,,,,,")


def test_refine_results_export_each_arm_and_the_paired_difference(researcher_client, rubric_job):
    study = refine.refine_launch(
        generation_job=rubric_job, evaluator_model="offline/standard",
        editor_model="offline/standard", judge_model="offline/strict",
    )  # fmt: skip
    for pk in study.refinements.values_list("pk", flat=True):
        refine.refinement_execute(pk)

    table = refine.refine_table(study)
    assert list(table["arm"]) == ["rubric", "self", "rubric - self"]
    results = refine.refine_results(study)
    assert table.iloc[2]["mean_gain"] == pytest.approx(results["difference"].value)
    response = researcher_client.get(reverse("rubric_lab:refine_export", args=[study.pk, "md"]))
    assert response["Content-Type"].startswith("text/markdown")
    assert b"| arm" in response.content and b"rubric - self" in response.content
    (latex,) = latex_floats(refine.refine_export(study, "tex"))
    assert latex.label == f"tab:refine-{study.pk}" and latex.rows == 3
    assert researcher_client.get(
        reverse("rubric_lab:refine_export", args=[study.pk, "xls"])
    ).status_code == 404  # fmt: skip


def test_the_pipeline_list_costs_the_same_queries_for_one_job_or_many(
    researcher_client, played_run, django_assert_max_num_queries
):
    conversations = list(played_run.conversations.scorable()[:2])
    pipeline.generation_job_launch(conversations=conversations, generator_model="offline/standard")
    with django_assert_max_num_queries(12) as one:
        researcher_client.get(reverse("rubric_lab:pipelines"))
    for _ in range(5):
        pipeline.generation_job_launch(
            conversations=conversations, generator_model="offline/standard"
        )
    with django_assert_max_num_queries(len(one.captured_queries)):
        page = researcher_client.get(reverse("rubric_lab:pipelines"))
    assert GenerationJob.objects.count() == 6
    assert page.content.decode().count("0 of 2") == 6


def test_the_poll_that_finds_a_study_over_reloads_the_page_once(researcher_client, played_run):
    study = sensitivity.study_launch(
        run=played_run, setup=JudgeSetup.PAIRWISE, judge_model="offline/standard",
        perturber_model="offline/surgical", perturbations=["claim_without_tool_call"],
        max_cases=1,
    )  # fmt: skip
    url = reverse("rubric_lab:sensitivity", args=[study.pk]) + "?fragment=progress"
    running = researcher_client.get(url, headers={"HX-Request": "true"})
    assert "HX-Refresh" not in running and 'hx-trigger="every 2s"' in running.content.decode()
    for pair_id in study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    finished = researcher_client.get(url, headers={"HX-Request": "true"})
    assert finished["HX-Refresh"] == "true"
    assert "hx-trigger" not in finished.content.decode()


def test_an_upload_too_big_to_read_is_refused_by_its_size(researcher_client, played_run, settings):
    settings.UPLOAD_LIMIT_MB = 0
    big = SimpleUploadedFile("gold.csv", b"case,criterion\n" + b"0,x\n" * 10)
    response = researcher_client.post(
        reverse("rubric_lab:coverage_list"),
        {"action": "upload", "benchmark_set": played_run.benchmark_set.pk, "file": big},
    )
    assert "uploads are limited to 0 MB" in response.context["upload_form"].errors["file"][0]
    assert not ExpertCriterion.objects.exists()
