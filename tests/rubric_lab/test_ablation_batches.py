"""Ablations in batch mode: every job of the chain (each variant's rubric generation, then its
coverage run and sensitivity study) is launched in batch mode with the ablation's choice to
resend failures live, and each runs through its own batch poll."""

import json

import pytest
from django.core.cache import caches
from django.urls import reverse

from jobs.models import JobStatus, ProviderBatch
from rubric_lab.models import AblationStudy, AblationVariant, GenerationJob
from rubric_lab.services import (
    ablations,
    coverage,
    generation_batches,
    sensitivity,
    study_batches,
    study_forecasts,
)
from tests.rubric_lab.batch_polls import polled_until_done

pytestmark = pytest.mark.django_db

MODELS = {
    "generator_model": "offline/standard",
    "judge_model": "offline/standard",
    "perturber_model": "offline/surgical",
    "reference_model": "offline/careful",
}


@pytest.fixture(autouse=True)
def no_cached_answers():
    caches["llm"].clear()


def launch(run, **options):
    return ablations.ablation_launch(
        run=run, **{**MODELS, "max_cases": 1, "batch": True, **options}
    )


def poll_until_done(poll, job, *, polls=30):
    return polled_until_done(poll, job, polls=polls)


def test_a_batch_ablation_runs_its_whole_chain_in_batches(played_run):
    study = launch(played_run, batch_resend_live=True)
    arms = {arm.variant: arm for arm in study.arms.select_related("generation_job")}
    jobs = [arm.generation_job for arm in arms.values()]
    assert {(job.batch, job.batch_resend_live) for job in jobs} == {(True, True)}
    full = arms[AblationVariant.FULL]
    conversation = full.generation_job.generations.get().conversation
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json",
        content=json.dumps([{"case": conversation.entry.index,
                             "criterion": "Tells the patient when to call 911"}]),
    )  # fmt: skip
    study.status = JobStatus.RUNNING
    study.save(update_fields=["status"])
    for job in jobs:  # each variant's rubrics, through its generation job's batches
        poll_until_done(generation_batches.generation_batch_poll, job)
    started = []

    ablations.ablation_advance(
        study, start_sensitivity=started.append, start_coverage=started.append
    )

    assert len(started) == 12  # a sensitivity study and a coverage run per variant
    assert {(job.batch, job.batch_resend_live) for job in started} == {(True, True)}
    full.refresh_from_db()
    sensitivity_study = poll_until_done(
        lambda job: study_batches.batch_poll(sensitivity.BATCHES, job), full.sensitivity_study
    )
    coverage_run = poll_until_done(
        lambda job: study_batches.batch_poll(coverage.BATCHES, job), full.coverage_run
    )
    assert (sensitivity_study.status, coverage_run.status) == (JobStatus.FINISHED,) * 2
    for kind, job in (("sensitivity", sensitivity_study), ("coverage", coverage_run)):
        assert ProviderBatch.objects.filter(job_kind=kind, job_id=job.pk).exists()


def test_a_live_ablation_launches_its_chain_live(played_run):
    study = launch(played_run, batch=False, batch_resend_live=True)
    assert not study.batch and not study.batch_resend_live
    jobs = GenerationJob.objects.filter(pk__in=study.arms.values("generation_job"))
    assert set(jobs.values_list("batch", flat=True)) == {False}


@pytest.mark.parametrize("role", ["generator_model", "perturber_model"])
def test_a_batch_ablation_naming_a_model_without_a_batch_api_is_refused(played_run, role):
    with pytest.raises(ablations.AblationError, match="openai-compatible/local has no batch API"):
        launch(played_run, **{role: "openai-compatible/local"})
    assert not AblationStudy.objects.exists() and not GenerationJob.objects.exists()


def test_the_launch_form_starts_a_batch_ablation_whose_page_says_so(played_run, admin_client_):
    form = {"run": played_run.pk, **MODELS, "max_cases": 1, "use_cache": "on", "batch": "on"}
    response = admin_client_.post(reverse("rubric_lab:ablation_list"), form)
    study = AblationStudy.objects.get()
    assert response.status_code == 302 and study.batch and not study.batch_resend_live

    page = admin_client_.get(reverse("rubric_lab:ablation", args=[study.pk])).content.decode()
    words = " ".join(page.split())
    assert "Mode: batch (provider batch APIs, batch price) (every rubric generation" in words


def test_the_forecast_of_a_batch_ablation_is_at_the_batch_price(played_run):
    # With no earlier study to learn from there is no cost to halve: the price it is read at
    # is what changes (the kinds' own batch forecasts compare the two costs).
    listed = study_forecasts.launch_forecast(lambda: launch(played_run, batch=False))
    batched = study_forecasts.launch_forecast(lambda: launch(played_run))
    assert batched.source == listed.source + ", in batches (batch price)"
    assert not AblationStudy.objects.exists()
