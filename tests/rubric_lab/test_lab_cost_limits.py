"""Every rubric-lab job takes a cost limit: refused beside a model without a price (named),
accepted once priced, a pause once spent (the ablation's over all its jobs), a resume with a
higher limit; and its page shows the cost of each model it called."""

import json
from decimal import Decimal

import pytest
from django.urls import reverse

from jobs.models import JobStatus
from llm.services import prices
from rubric_lab.models import GenerationJob, JudgeSetup
from rubric_lab.services import ablations, budgets, coverage, pipeline, refine, sensitivity
from rubric_lab.services import evaluation_work as work

pytestmark = pytest.mark.django_db

UNPRICED = "openai-compatible/lab-model"
LIMIT = Decimal("5.00")
TINY = Decimal("0.01")


def set_price(*models: str, figure: str = "1000") -> None:
    for model in models:
        prices.price_set(model=model, input_per_million=Decimal(figure),
                         output_per_million=Decimal(figure))  # fmt: skip


def references(run, count: int):
    return list(run.conversations.filter(run_agent__model="offline/careful").order_by("pk")[:count])


@pytest.fixture
def rubric_job(played_run):
    """Two instance rubrics (built before any price is set, so they cost nothing), each case
    with an expert criterion."""
    job = pipeline.generation_job_launch(
        conversations=references(played_run, 2), generator_model="offline/standard"
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    entries = job.generations.values_list("conversation__entry__index", flat=True)
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json",
        content=json.dumps([{"case": i, "criterion": "Says when to call 911"} for i in entries]),
    )  # fmt: skip
    return job


def launches(run, rubrics, model: str, limit):
    """Each kind of lab job, launched with `model` in one of its roles and this limit."""
    return {
        "generation": lambda: pipeline.generation_job_launch(
            conversations=references(run, 2), generator_model=model, cost_limit_usd=limit,
            use_cache=False, concurrency=1,
        ),
        "sensitivity": lambda: sensitivity.study_launch(
            run=run, setup=JudgeSetup.PAIRWISE, judge_model=model,
            perturber_model="offline/surgical", reference_model="offline/careful", max_cases=2,
            perturbations=["add_prescriptive_directive"], cost_limit_usd=limit,
            use_cache=False, concurrency=1,
        ),
        "coverage": lambda: coverage.coverage_launch(
            generation_job=rubrics, judge_model=model, cost_limit_usd=limit, use_cache=False,
            concurrency=1,
        ),
        "refine": lambda: refine.refine_launch(
            generation_job=rubrics, evaluator_model="offline/standard",
            editor_model="offline/standard", judge_model=model, cost_limit_usd=limit,
            use_cache=False, concurrency=1,
        ),
        "ablation": lambda: ablations.ablation_launch(
            run=run, generator_model=model, judge_model="offline/standard",
            perturber_model="offline/surgical", reference_model="offline/careful", max_cases=2,
            cost_limit_usd=limit, use_cache=False,
        ),
    }  # fmt: skip


KINDS = ("generation", "sensitivity", "coverage", "refine", "ablation")
REFUSALS = (
    pipeline.PipelineLaunchError,
    sensitivity.StudyError,
    coverage.CoverageError,
    refine.RefineError,
    ablations.AblationError,
)


@pytest.mark.parametrize("kind", KINDS)
def test_a_lab_job_with_a_limit_and_an_unpriced_model_is_refused_naming_it(
    played_run, rubric_job, kind
):
    with pytest.raises(REFUSALS, match="no price") as refusal:
        launches(played_run, rubric_job, UNPRICED, LIMIT)[kind]()
    assert UNPRICED in str(refusal.value)

    set_price(UNPRICED, figure="0.5")
    job = launches(played_run, rubric_job, UNPRICED, LIMIT)[kind]()

    assert job.cost_limit_usd == LIMIT


def dispatched(dispatch, job, execute, capture) -> int:
    """One dispatch, its units executed here as the workers would; how many were sent."""
    sent: list = []

    def send(tasks):
        sent.extend(tasks)
        for pk, token in tasks:
            execute(pk, token)

    with capture(execute=True):
        dispatch(job, send)
    return len(sent)


UNITS = {
    "generation": (pipeline.generation_dispatch, pipeline.generation_execute),
    "sensitivity": (sensitivity.study_dispatch, sensitivity.near_miss_execute),
    "coverage": (coverage.coverage_dispatch, coverage.coverage_case_execute),
    "refine": (refine.refine_dispatch, refine.refinement_execute),
}


@pytest.mark.parametrize("kind", list(UNITS))
def test_the_limit_pauses_each_kind_of_lab_job_and_a_higher_limit_resumes_it(
    played_run, rubric_job, kind, django_capture_on_commit_callbacks
):
    set_price("offline/standard", "offline/strict", "offline/surgical")
    job = launches(played_run, rubric_job, "offline/standard", TINY)[kind]()
    dispatch, execute = UNITS[kind]
    capture = django_capture_on_commit_callbacks

    assert dispatched(dispatch, job, execute, capture) == 1
    assert dispatched(dispatch, job, execute, capture) == 0
    job.refresh_from_db()
    assert job.status == JobStatus.PAUSED and "Cost limit reached" in job.stop_reason

    with pytest.raises(ValueError, match="give a higher limit"):
        budgets.job_resume(job, cost_limit_usd=TINY)
    assert budgets.job_resume(job, cost_limit_usd=Decimal("100000")) == [job]
    assert dispatched(dispatch, job, execute, capture) == 1


def test_an_ablations_limit_covers_every_job_it_launched(
    played_run, django_capture_on_commit_callbacks
):
    set_price("offline/standard")
    study = launches(played_run, None, "offline/standard", TINY)["ablation"]()
    jobs = [arm.generation_job for arm in study.arms.order_by("pk")]
    GenerationJob.objects.filter(pk__in=[j.pk for j in jobs]).update(concurrency=1)

    def generate(job) -> int:
        return dispatched(pipeline.generation_dispatch, job, pipeline.generation_execute,
                          django_capture_on_commit_callbacks)  # fmt: skip

    assert generate(jobs[0]) == 1  # one rubric spends past the ablation's limit
    assert generate(jobs[1]) == 0  # so another variant sends nothing more

    study.refresh_from_db()
    jobs[1].refresh_from_db()
    assert study.status == JobStatus.PAUSED and "Cost limit reached" in study.stop_reason
    assert jobs[1].status == JobStatus.PAUSED and study.name in jobs[1].stop_reason
    assert not ablations.ablation_advance(
        study, start_sensitivity=lambda s: None, start_coverage=lambda c: None
    )
    study.refresh_from_db()
    assert study.status == JobStatus.PAUSED  # waits for a resume, never "finished"

    resumed = budgets.job_resume(study, cost_limit_usd=Decimal("100000"))
    assert resumed[0] == study and jobs[1] in resumed
    assert generate(jobs[1]) == 1


# --- pages ------------------------------------------------------------------------------------


def test_a_paused_study_page_shows_each_models_cost_and_a_resume_form(
    researcher_client, played_run, rubric_job, django_capture_on_commit_callbacks
):
    set_price("offline/standard", "offline/strict")
    study = launches(played_run, rubric_job, "offline/standard", TINY)["refine"]()
    dispatched(refine.refine_dispatch, study, refine.refinement_execute,
               django_capture_on_commit_callbacks)  # fmt: skip
    dispatched(refine.refine_dispatch, study, refine.refinement_execute,
               django_capture_on_commit_callbacks)  # fmt: skip

    page = researcher_client.get(reverse("rubric_lab:refine", args=[study.pk])).content.decode()

    assert "Cost limit reached" in page
    assert reverse("rubric_lab:job_resume", args=["refine", study.pk]) in page
    table = page.split("Cost per model")[1].split("</table>")[0]
    assert "offline/standard" in table and "$" in table
    assert work.progress(study.refinements.all()).cost > 0


def test_resuming_from_the_page_raises_the_limit(researcher_client, played_run, rubric_job):
    study = launches(played_run, rubric_job, "offline/standard", TINY)["coverage"]()
    type(study).objects.filter(pk=study.pk).update(status=JobStatus.PAUSED, stop_reason="x")

    url = reverse("rubric_lab:job_resume", args=["coverage", study.pk])
    response = researcher_client.post(url, {"cost_limit": "20"})

    assert response.status_code == 302
    study.refresh_from_db()
    assert study.status == JobStatus.RUNNING and study.cost_limit_usd == Decimal("20")
    assert (
        researcher_client.post(
            reverse("rubric_lab:job_resume", args=["nothing", study.pk])
        ).status_code
        == 404
    )
