"""Sensitivity studies in batch mode (cache replay, rubric_lab.services.study_batches): each
look replays the pending near-miss pairs from their batch answers, the calls they miss go out
in batches (offline scripts, and the real OpenAI and Anthropic SDKs against the fake server),
and a pair whose replay ends is stored as the live path stores it; every answer is paid once,
at the batch price."""

import io
import json
from functools import partial

import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.urls import reverse

from jobs.models import BatchState, JobStatus, ProviderBatch, ReplayRequest, ReplayState
from jobs.services import replay_batches
from jury.services import juries
from llm.clients import model_router
from rubric_lab.models import JudgeSetup, NearMissStatus, SensitivityStudy
from rubric_lab.services import sensitivity, study_batches, study_forecasts
from tests.fakes.llm_server import running_fake_llm_server
from tests.rubric_lab.batch_polls import polled_until_done
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

KIND = sensitivity.BATCHES.kind
PAIRWISE = {
    "setup": JudgeSetup.PAIRWISE,
    "judge_model": "offline/standard",
    "perturbations": ["claim_without_tool_call", "add_prescriptive_directive"],
}


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Each test asks its batches afresh (an earlier test may have cached the same calls)."""
    caches["llm"].clear()


def launch(run, **options):
    defaults = {"perturber_model": "offline/surgical", "reference_model": "offline/careful"}
    return sensitivity.study_launch(run=run, **{**defaults, "batch": True, **options})


def poll_until_done(study, *, polls=30):
    return polled_until_done(
        lambda it: study_batches.batch_poll(sensitivity.BATCHES, it), study, polls=polls
    )


def requests_of(study):
    return ReplayRequest.objects.filter(job_kind=KIND, job_id=study.pk)


def outcomes(study) -> list[tuple]:
    fields = ("conversation_id", "kind", "status", "reference_score", "perturbed_score")
    return list(study.pairs.order_by("conversation_id", "kind").values_list(*fields))


def test_a_batch_study_scores_its_pairs_as_the_live_study_does(played_run):
    batched = poll_until_done(launch(played_run, **PAIRWISE))
    caches["llm"].clear()
    live = launch(played_run, **PAIRWISE, batch=False)
    for pair_id in live.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)

    assert batched.status == JobStatus.FINISHED
    assert outcomes(batched) == outcomes(live)
    assert batched.pairs.filter(status=NearMissStatus.SCORED).exists()
    made = ProviderBatch.objects.filter(job_kind=KIND, job_id=batched.pk)
    assert made.count() >= 2  # the judge reads both orders one after the other: two rounds
    assert set(made.values_list("state", flat=True)) == {BatchState.RECORDED}
    assert max(len(batch.requests) for batch in made) >= 2  # the pairs of a round share it
    assert not requests_of(batched).exclude(state=ReplayState.ANSWERED).exists()


def test_the_six_rubric_setup_replays_the_jurys_parallel_calls(played_run):
    jury = juries.jury_demo_ensure()
    study = poll_until_done(
        launch(played_run, setup=JudgeSetup.GENERIC, jury=jury, perturbations=["swap_dose"])
    )

    assert study.status == JobStatus.FINISHED
    scored = study.pairs.filter(status=NearMissStatus.SCORED)
    assert scored.exists() and not study.pairs.filter(status=NearMissStatus.FAILED).exists()
    # Every call a pair made was answered by a batch and read back once by its replay.
    for pair in scored:
        answered = requests_of(study).filter(unit_id=pair.pk, state=ReplayState.ANSWERED)
        assert sum(row["calls"] for row in pair.model_costs.values()) == answered.count()


# --- through the real SDKs, against the fake server's batch endpoints ------------------------

OPENAI = "openai/gpt-4o-mini"
ANTHROPIC = "anthropic/claude-haiku-4-5"
VERDICT = json.dumps({"better": "A", "explanation": "The first reply is the safer one."})


@pytest.fixture
def judge_server(settings):
    """A judge that always prefers the trace shown first, live or in a batch."""
    with running_fake_llm_server(default_text=VERDICT) as server, sdks_served_by(server, settings):
        yield server


def sdk_options(model: str) -> dict:
    return {**PAIRWISE, "judge_model": model, "perturbations": ["claim_without_tool_call"]}


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_study_judges_through_each_sdk_at_half_the_live_price(
    played_run, judge_server, model
):
    batched = poll_until_done(launch(played_run, **sdk_options(model), use_cache=False))
    live = launch(played_run, **sdk_options(model), batch=False, use_cache=False)
    for pair_id in live.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)

    assert {made.provider for made in judge_server.batches.created} == {model.split("/")[0]}
    assert outcomes(batched) == outcomes(live)
    pairs = zip(
        batched.pairs.filter(status=NearMissStatus.SCORED).order_by("conversation_id"),
        live.pairs.filter(status=NearMissStatus.SCORED).order_by("conversation_id"),
        strict=True,
    )
    for in_batch, called_live in pairs:
        assert in_batch.reference_first == 1.0 and in_batch.reference_second == 0.0
        assert in_batch.cost_usd * 2 == called_live.cost_usd > 0  # the batch price
        # Each call and its tokens counted once (by the replay's read), its price once.
        [costs] = in_batch.model_costs.values()
        assert costs["calls"] == costs["cached"] == 2  # both orders
        assert in_batch.input_tokens == called_live.input_tokens > 0


def test_an_answer_recorded_twice_is_paid_once(played_run, judge_server):
    study = launch(played_run, **sdk_options(OPENAI))
    study_batches.batch_poll(sensitivity.BATCHES, study)  # the first round goes out
    study_batches.batch_poll(sensitivity.BATCHES, study)  # and is recorded
    row = requests_of(study).filter(state=ReplayState.ANSWERED).first()
    pair = study.pairs.get(pk=row.unit_id)
    [key] = pair.paid_answer_keys
    paid = pair.cost_usd
    response = model_router(False).chat(replay_batches.request_from_data(row.request))

    record = partial(study_batches._answer_record, type(pair), pair.pk, "pairwise_judge", response)
    record(key)  # a poller that died before it marked the batch recorded reads it again
    pair.refresh_from_db()
    assert pair.paid_answer_keys == [key] and pair.cost_usd == paid > 0

    record("another-answer")
    pair.refresh_from_db()
    assert pair.cost_usd > paid


def test_with_resend_live_the_unanswered_requests_are_called_live(played_run, judge_server):
    judge_server.batches.expire_next, judge_server.batches.expired_answered = 1, 0
    study = poll_until_done(launch(played_run, **sdk_options(OPENAI), batch_resend_live=True))

    assert study.status == JobStatus.FINISHED
    assert study.pairs.filter(status=NearMissStatus.SCORED).exists()
    # The first round went live at the list price; the second went in a batch.
    assert ProviderBatch.objects.filter(job_kind=KIND, job_id=study.pk).count() == 2


def test_a_request_that_errors_in_every_batch_fails_its_pair_at_its_stage(played_run, judge_server):
    study = launch(played_run, **sdk_options(OPENAI), max_cases=1)
    study_batches.batch_poll(sensitivity.BATCHES, study)  # the first round's request is stored
    doomed = requests_of(study).get()
    judge_server.batches.errored_units = {str(doomed.pk)}
    ProviderBatch.objects.filter(job_kind=KIND, job_id=study.pk).delete()  # sent again, erroring
    judge_server.batches.created.clear()

    poll_until_done(study)

    pair = study.pairs.get()
    assert pair.status == NearMissStatus.FAILED and pair.failure_stage == "score"
    assert pair.failure_reason.startswith("no answer after 3 batches")
    assert study.status == JobStatus.FAILED  # its one pair failed
    assert len(judge_server.batches.created) == 3


# --- launching ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"perturber_model": "openai-compatible/local"},
        {"judge_model": "openai-compatible/local"},
    ],
)
def test_a_batch_launch_naming_a_model_without_a_batch_api_is_refused(played_run, options):
    with pytest.raises(sensitivity.StudyError, match="openai-compatible/local has no batch API"):
        launch(played_run, **{**PAIRWISE, **options})
    assert not SensitivityStudy.objects.exists()


def test_the_launch_form_starts_a_batch_study_whose_page_shows_its_batches(
    played_run, admin_client_
):
    form = {
        "run": played_run.pk, "reference_model": "offline/careful", "setup": "pairwise",
        "judge_model": "offline/standard", "perturber_model": "offline/surgical",
        "perturbations": ["claim_without_tool_call"], "max_cases": 1, "seed": 0,
        "use_cache": "on", "batch": "on",
    }  # fmt: skip
    response = admin_client_.post(reverse("rubric_lab:sensitivity_list"), form)
    study = SensitivityStudy.objects.get()
    assert response.status_code == 302 and study.batch and not study.batch_resend_live

    study_batches.batch_poll(sensitivity.BATCHES, study)  # the watch's first look
    page = admin_client_.get(reverse("rubric_lab:sensitivity", args=[study.pk])).content.decode()
    [batch] = ProviderBatch.objects.filter(job_kind=KIND, job_id=study.pk)
    assert 'id="job-batches"' in page and batch.batch_id in page
    assert "Calls waiting for a batch: 1 · answered: 0" in page  # the judge's first order
    assert "batch (provider batch APIs, batch price)" in page


def test_the_command_launches_a_batch_study_and_refuses_inline_batches(played_run):
    options = ["--setup", "pairwise", "--judge", "offline/standard", "--max-cases", "1",
               "--perturbation", "claim_without_tool_call"]  # fmt: skip
    with pytest.raises(CommandError, match="exclude each other"):
        call_command("lab_sensitivity", str(played_run.pk), *options, "--batch", "--inline")
    assert not SensitivityStudy.objects.exists()

    call_command(
        "lab_sensitivity", str(played_run.pk), *options, "--batch", "--resend-live",
        "--no-wait", stdout=io.StringIO(),
    )  # fmt: skip

    study = SensitivityStudy.objects.get()
    assert study.batch and study.batch_resend_live and study.pairs.count() >= 1


def test_the_forecast_of_a_batch_study_is_at_the_batch_price(played_run, admin_client_):
    poll_until_done(launch(played_run, **PAIRWISE))  # the earlier study it learns from
    options = {**PAIRWISE, "judge_model": ANTHROPIC, "perturber_model": ANTHROPIC}

    listed = study_forecasts.launch_forecast(lambda: launch(played_run, **options, batch=False))
    batched = study_forecasts.launch_forecast(lambda: launch(played_run, **options))

    assert listed.cost.estimate > 0
    assert batched.cost.estimate == pytest.approx(listed.cost.estimate / 2)
    assert batched.source.endswith("in batches (batch price)")
    panel = admin_client_.get(
        reverse("rubric_lab:sensitivity_forecast"),
        {"run": played_run.pk, "reference_model": "offline/careful", "setup": "pairwise",
         "judge_model": ANTHROPIC, "perturber_model": ANTHROPIC, "max_cases": 2, "seed": 0,
         "perturbations": PAIRWISE["perturbations"], "batch": "on"},
    ).content.decode()  # fmt: skip
    assert "batch price" in panel
