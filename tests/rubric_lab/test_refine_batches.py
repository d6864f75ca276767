"""Refine studies in batch mode (cache replay, rubric_lab.services.study_batches): each look
replays the pending refinements from their batch answers; the critique, the edit and the
judges' calls go out round after round, and a refinement whose replay ends is stored as the
live path stores it, each answer paid once at the batch price."""

import json

import pytest
from django.core.cache import caches
from django.urls import reverse

from jobs.models import BatchState, JobStatus, ProviderBatch, ReplayRequest, ReplayState
from rubric_lab.models import RefineArm, RefineStudy, WorkStatus
from rubric_lab.services import coverage, pipeline, refine, study_batches, study_forecasts
from tests.fakes.llm_server import running_fake_llm_server
from tests.rubric_lab.batch_polls import polled_until_done
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

KIND = refine.BATCHES.kind
ANTHROPIC = "anthropic/claude-haiku-4-5"
MODELS = {
    "evaluator_model": "offline/standard",
    "editor_model": "offline/standard",
    "judge_model": "offline/strict",
}


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Each test asks its batches afresh (an earlier test may have cached the same calls)."""
    caches["llm"].clear()


@pytest.fixture
def rubric_job(played_run):
    """A generation job of one rubric whose case has expert criteria (all three arms)."""
    conversation = played_run.conversations.filter(run_agent__model="offline/careful").first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/standard"
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)
    criteria = [
        {"case": conversation.entry.index, "axis": "accuracy",
         "criterion": "Tells the patient to call 911 if symptoms get worse"},
        {"case": conversation.entry.index, "axis": "communication_quality",
         "criterion": "Acknowledges how the patient feels before giving advice"},
    ]  # fmt: skip
    coverage.expert_criteria_upload(
        benchmark_set=played_run.benchmark_set, filename="gold.json", content=json.dumps(criteria)
    )
    return job


def launch(job, **options):
    defaults = {**MODELS, "criteria_judge_model": "offline/standard", "batch": True}
    return refine.refine_launch(generation_job=job, **{**defaults, **options})


def poll_until_done(study, *, polls=30):
    return polled_until_done(
        lambda it: study_batches.batch_poll(refine.BATCHES, it), study, polls=polls
    )


def outcomes(study) -> list[tuple]:
    fields = ("arm", "status", "plan", "edits", "original_score", "refined_score",
              "original_expert_score", "refined_expert_score", "expert_axes")  # fmt: skip
    return list(study.refinements.order_by("arm").values_list(*fields))


def test_a_batch_study_refines_and_scores_as_the_live_study_does(rubric_job):
    batched = poll_until_done(launch(rubric_job))
    caches["llm"].clear()
    live = launch(rubric_job, batch=False)
    for pk in live.refinements.values_list("pk", flat=True):
        refine.refinement_execute(pk)

    assert batched.status == JobStatus.FINISHED
    assert outcomes(batched) == outcomes(live)
    assert {row[0] for row in outcomes(batched)} == set(RefineArm.values)
    assert set(batched.refinements.values_list("status", flat=True)) == {WorkStatus.DONE}
    made = ProviderBatch.objects.filter(job_kind=KIND, job_id=batched.pk).order_by("pk")
    assert made.count() >= 3  # the critiques, then the edits, then the judges' rounds
    assert len(made[0].requests) == 3  # the three arms' critiques share the first round
    assert set(made.values_list("state", flat=True)) == {BatchState.RECORDED}
    answered = ReplayRequest.objects.filter(job_kind=KIND, job_id=batched.pk)
    assert set(answered.values_list("state", flat=True)) == {ReplayState.ANSWERED}
    for row in batched.refinements.all():
        # Every call was read back from a batch answer by the replay; each answer paid once
        # (a refinement asking the same thing twice, such as a copy left unedited, reads one).
        calls = sum(costs["calls"] for costs in row.model_costs.values())
        cached = sum(costs["cached"] for costs in row.model_costs.values())
        requests = answered.filter(unit_id=row.pk).count()
        assert calls == cached >= requests == len(row.paid_answer_keys) > 0


def test_a_refinement_names_the_stage_of_each_purpose():
    stage_of = refine.BATCHES.stage_of
    assert [stage_of(p) for p in ("refine_critique", "refine_edit", "judge", "rubric_judge")] == [
        "critique",
        "edit",
        "judge",
        "judge",
    ]


# --- through the real SDKs, against the fake server's batch endpoints ------------------------

OPENAI = "openai/gpt-4o-mini"
NOTHING_TO_CHANGE = json.dumps({"actions": []})


@pytest.fixture
def evaluator_server(settings):
    """An evaluator that finds nothing to change, live or in a batch."""
    with (
        running_fake_llm_server(default_text=NOTHING_TO_CHANGE) as server,
        sdks_served_by(server, settings),
    ):
        yield server


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_study_critiques_through_each_sdk_at_half_the_live_price(
    rubric_job, evaluator_server, model
):
    options = {"evaluator_model": model, "criteria_judge_model": "", "use_cache": False}
    batched = poll_until_done(launch(rubric_job, **options))
    live = launch(rubric_job, **options, batch=False)
    for pk in live.refinements.values_list("pk", flat=True):
        refine.refinement_execute(pk)

    assert {made.provider for made in evaluator_server.batches.created} == {model.split("/")[0]}
    assert outcomes(batched) == outcomes(live)
    pairs = zip(batched.refinements.order_by("arm"), live.refinements.order_by("arm"), strict=True)
    for in_batch, called_live in pairs:
        assert in_batch.status == WorkStatus.DONE and in_batch.plan == [] == in_batch.edits
        assert in_batch.cost_usd * 2 == called_live.cost_usd > 0  # the critique's batch price
        assert in_batch.model_costs[model]["calls"] == in_batch.model_costs[model]["cached"] == 1


def test_a_critique_that_errors_in_every_batch_fails_its_refinement_at_its_stage(
    rubric_job, evaluator_server
):
    study = launch(rubric_job, evaluator_model=OPENAI, criteria_judge_model="")
    study_batches.batch_poll(refine.BATCHES, study)  # the critiques' requests are stored
    requests = ReplayRequest.objects.filter(job_kind=KIND, job_id=study.pk)
    evaluator_server.batches.errored_units = {
        str(pk) for pk in requests.values_list("pk", flat=True)
    }
    ProviderBatch.objects.filter(job_kind=KIND, job_id=study.pk).delete()  # sent again, erroring
    evaluator_server.batches.created.clear()

    poll_until_done(study)

    for row in study.refinements.all():
        assert row.status == WorkStatus.FAILED and row.failure_stage == "critique"
        assert row.failure_reason.startswith("no answer after 3 batches")
    assert study.status == JobStatus.FAILED
    assert len(evaluator_server.batches.created) == 3


# --- launching ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"evaluator_model": "openai-compatible/local"},
        {"editor_model": "openai-compatible/local"},
        {"criteria_judge_model": "openai-compatible/local"},
    ],
)
def test_a_batch_launch_naming_a_model_without_a_batch_api_is_refused(rubric_job, options):
    with pytest.raises(refine.RefineError, match="openai-compatible/local has no batch API"):
        launch(rubric_job, **options)
    assert not RefineStudy.objects.exists()


def test_a_live_study_still_sends_its_refinements_to_the_workers(rubric_job, monkeypatch):
    polled = []
    monkeypatch.setattr(study_batches, "batch_poll", lambda kind, job: polled.append(job))
    study = launch(rubric_job, batch=False)
    RefineStudy.objects.filter(pk=study.pk).update(status=JobStatus.RUNNING)  # as started
    sent = refine.refine_dispatch(study, lambda tasks: None)  # sent once the leases commit
    assert len(sent) == 3 and not polled


def test_the_launch_form_starts_a_batch_study_whose_page_shows_its_batches(
    rubric_job, admin_client_
):
    form = {"action": "launch", "generation_job": rubric_job.pk, **MODELS,
            "criteria_judge_model": "", "max_cases": 1, "use_cache": "on", "batch": "on",
            "batch_resend_live": "on"}  # fmt: skip
    response = admin_client_.post(reverse("rubric_lab:refine_list"), form)
    study = RefineStudy.objects.get()
    assert response.status_code == 302 and study.batch and study.batch_resend_live

    study_batches.batch_poll(refine.BATCHES, study)  # the watch's first look
    page = admin_client_.get(reverse("rubric_lab:refine", args=[study.pk])).content.decode()
    [batch] = ProviderBatch.objects.filter(job_kind=KIND, job_id=study.pk)
    assert 'id="job-batches"' in page and batch.batch_id in page
    assert "Calls waiting for a batch: 3 · answered: 0" in page  # the three critiques
    assert "batch (provider batch APIs, batch price); failures resent live" in page


def test_the_forecast_of_a_batch_study_is_at_the_batch_price(rubric_job):
    poll_until_done(launch(rubric_job))  # the earlier study it learns from
    options = {"evaluator_model": ANTHROPIC, "editor_model": ANTHROPIC, "judge_model": ANTHROPIC,
               "criteria_judge_model": ANTHROPIC}  # fmt: skip

    listed = study_forecasts.launch_forecast(lambda: launch(rubric_job, **options, batch=False))
    batched = study_forecasts.launch_forecast(lambda: launch(rubric_job, **options))

    assert listed.cost.estimate > 0
    assert batched.cost.estimate == pytest.approx(listed.cost.estimate / 2)
    assert batched.source.endswith("in batches (batch price)")
