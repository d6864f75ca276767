"""Coverage runs in batch mode (cache replay, rubric_lab.services.study_batches): each case's
decomposition, then its entailment, goes out in a batch (offline scripts, and the real OpenAI
and Anthropic SDKs against the fake server); a case whose replay ends is stored as the live
path stores it, each answer paid once at the batch price."""

import io
import json

import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.urls import reverse

from jobs.models import BatchState, JobStatus, ProviderBatch, ReplayRequest, ReplayState
from rubric_lab.models import CoverageRun, WorkStatus
from rubric_lab.services import coverage, pipeline, study_batches, study_forecasts
from tests.fakes.llm_server import running_fake_llm_server
from tests.rubric_lab.batch_polls import polled_until_done
from tests.rubric_lab.coverage_server import coverage_reply
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

KIND = coverage.BATCHES.kind
OPENAI = "openai/gpt-4o-mini"
ANTHROPIC = "anthropic/claude-haiku-4-5"


@pytest.fixture(autouse=True)
def no_cached_answers():
    caches["llm"].clear()


@pytest.fixture
def rubric_job(played_run):
    """A generation job of two rubrics whose cases have expert criteria."""
    conversations = list(played_run.conversations.filter(run_agent__model="offline/careful")[:2])
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard"
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    criteria = []
    for generation in job.generations.all():
        index = generation.conversation.entry.index
        texts = generation.rubric.criteria.values_list("text", flat=True)[:2]
        criteria += [{"case": index, "criterion": text} for text in texts]
        criteria.append({"case": index, "criterion": "Explains how to book a dental cleaning"})
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json", content=json.dumps(criteria)
    )
    return job


def launch(job, **options):
    defaults = {"judge_model": "offline/standard", "batch": True}
    return coverage.coverage_launch(generation_job=job, **{**defaults, **options})


def poll_until_done(run, *, polls=20):
    return polled_until_done(
        lambda it: study_batches.batch_poll(coverage.BATCHES, it), run, polls=polls
    )


def outcomes(run) -> list[tuple]:
    fields = ("rubric_id", "status", "constraint_count", "entailed", "generated", "matched")
    return list(run.cases.order_by("rubric_id").values_list(*fields))


def test_a_batch_run_covers_its_cases_as_the_live_run_does(rubric_job):
    batched = poll_until_done(launch(rubric_job))
    caches["llm"].clear()
    live = launch(rubric_job, batch=False)
    for case_id in live.cases.values_list("pk", flat=True):
        coverage.coverage_case_execute(case_id)

    assert batched.status == JobStatus.FINISHED
    assert outcomes(batched) == outcomes(live)
    assert set(batched.cases.values_list("status", flat=True)) == {WorkStatus.DONE}
    made = ProviderBatch.objects.filter(job_kind=KIND, job_id=batched.pk).order_by("pk")
    assert made.count() == 2  # the decompositions, then the entailments
    assert [len(batch.requests) for batch in made] == [2, 2]  # both cases in each
    assert set(made.values_list("state", flat=True)) == {BatchState.RECORDED}
    answered = ReplayRequest.objects.filter(job_kind=KIND, job_id=batched.pk)
    assert set(answered.values_list("state", flat=True)) == {ReplayState.ANSWERED}
    for case in batched.cases.all():
        [costs] = case.model_costs.values()
        assert costs["calls"] == costs["cached"] == 2  # each read back once by the replay


# --- through the real SDKs, against the fake server's batch endpoints ------------------------


@pytest.fixture
def judge_server(settings):
    """A judge answering each decomposition and entailment as the offline script would, live
    or in a batch (tests/rubric_lab/coverage_server.py)."""
    with (
        running_fake_llm_server(responder=coverage_reply) as server,
        sdks_served_by(server, settings),
    ):
        yield server


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_run_judges_through_each_sdk_at_half_the_live_price(
    rubric_job, judge_server, model
):
    batched = poll_until_done(launch(rubric_job, judge_model=model, use_cache=False))
    live = launch(rubric_job, judge_model=model, batch=False, use_cache=False)
    for case_id in live.cases.values_list("pk", flat=True):
        coverage.coverage_case_execute(case_id)
    live.refresh_from_db()

    assert batched.status == live.status == JobStatus.FINISHED
    made = judge_server.batches.created
    assert len(made) == 2 and {batch.provider for batch in made} == {model.split("/")[0]}
    assert outcomes(batched) == outcomes(live)
    cases = zip(batched.cases.order_by("rubric_id"), live.cases.order_by("rubric_id"), strict=True)
    for in_batch, called_live in cases:
        assert in_batch.status == WorkStatus.DONE, in_batch.failure_reason
        assert 0 < in_batch.entailed < in_batch.constraint_count  # not "book a dental cleaning"
        assert in_batch.judgements == called_live.judgements
        assert in_batch.cost_usd * 2 == called_live.cost_usd > 0  # the batch price
        # Each call and its tokens counted once (by the replay's read), its price once.
        [(judge, costs)] = in_batch.model_costs.items()
        assert judge == model and costs["calls"] == costs["cached"] == 2
        assert in_batch.input_tokens == called_live.input_tokens > 0
        assert in_batch.output_tokens == called_live.output_tokens > 0


def test_a_batch_launch_with_a_judge_without_a_batch_api_is_refused(rubric_job):
    with pytest.raises(coverage.CoverageError, match="has no batch API"):
        launch(rubric_job, judge_model="openai-compatible/local")
    assert not CoverageRun.objects.exists()


def test_the_launch_form_starts_a_batch_run_whose_page_shows_its_batches(rubric_job, admin_client_):
    form = {"action": "launch", "generation_job": rubric_job.pk, "judge_model": "offline/standard",
            "use_cache": "on", "batch": "on", "batch_resend_live": "on"}  # fmt: skip
    response = admin_client_.post(reverse("rubric_lab:coverage_list"), form)
    run = CoverageRun.objects.get()
    assert response.status_code == 302 and run.batch and run.batch_resend_live

    study_batches.batch_poll(coverage.BATCHES, run)  # the watch's first look
    page = admin_client_.get(reverse("rubric_lab:coverage", args=[run.pk])).content.decode()
    [batch] = ProviderBatch.objects.filter(job_kind=KIND, job_id=run.pk)
    assert 'id="job-batches"' in page and batch.batch_id in page
    assert "Calls waiting for a batch: 2 · answered: 0" in page  # both decompositions
    assert "batch (provider batch APIs, batch price); failures resent live" in page


def test_the_command_launches_a_batch_run_and_refuses_inline_batches(rubric_job):
    options = [str(rubric_job.pk), "--judge", "offline/standard", "--batch"]
    with pytest.raises(CommandError, match="exclude each other"):
        call_command("lab_coverage", *options, "--inline")
    assert not CoverageRun.objects.exists()

    call_command("lab_coverage", *options, "--no-wait", stdout=io.StringIO())

    run = CoverageRun.objects.get()
    assert run.batch and not run.batch_resend_live and run.cases.count() == 2


def test_the_forecast_of_a_batch_run_is_at_the_batch_price(rubric_job):
    poll_until_done(launch(rubric_job))  # the earlier run it learns from

    listed = study_forecasts.launch_forecast(
        lambda: launch(rubric_job, judge_model=ANTHROPIC, batch=False)
    )
    batched = study_forecasts.launch_forecast(lambda: launch(rubric_job, judge_model=ANTHROPIC))

    assert listed.cost.estimate > 0
    assert batched.cost.estimate == pytest.approx(listed.cost.estimate / 2)
    assert batched.source.endswith("in batches (batch price)")
