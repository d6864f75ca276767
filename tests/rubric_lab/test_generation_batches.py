"""Rubric generation in batch mode (cache replay): each look replays the pending generations
from the response cache, the calls they miss go out in batches (offline scripts, and the real
OpenAI and Anthropic SDKs against the fake server), and a generation whose replay ends is
stored as the live path stores it; every answer is paid once, at the batch price."""

import io
import json

import pytest
from django.core.cache import caches
from django.core.management import CommandError, call_command
from django.db.models import Count
from django.urls import reverse

from benchmark.models import ModelCall
from jobs.models import BatchState, JobStatus, ProviderBatch, ReplayRequest, ReplayState
from jobs.services import replay_batches
from llm.engine.chat import ChatRequest, Message
from rubric_lab.models import GenerationJob, GenerationStatus, StageStatus
from rubric_lab.services import forecasts, generation_batches, pipeline
from rubric_lab.services.knowledge import retriever_for
from tests.rubric_lab.batch_polls import polled_until_done
from tests.rubric_lab.stage_server import StageServer, case_marker, scripted_answers
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

KIND = generation_batches.KIND


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Each test asks its batches afresh (an earlier test may have cached the same calls)."""
    caches["llm"].clear()


def launch(run, model="offline/standard", count=1, **options):
    conversations = list(run.conversations.scorable()[:count])
    return pipeline.generation_job_launch(
        conversations=conversations, generator_model=model, batch=True, **options
    )


def poll_until_done(job, *, polls=40):
    return polled_until_done(
        lambda it: generation_batches.generation_batch_poll(it), job, polls=polls
    )


def assert_each_answer_paid_once(job):
    calls = ModelCall.objects.filter(
        conversation__rubric_generations__job=job, purpose__startswith="rubric", cached=False
    )
    keys = calls.values("answer_key").annotate(n=Count("id"))
    assert calls.exists() and not keys.filter(n__gt=1).exists()
    answered = ReplayRequest.objects.filter(job_kind=KIND, job_id=job.pk)
    assert calls.count() == answered.filter(state=ReplayState.ANSWERED).count()
    # The replay reads each answer back under the key it was paid under: the paid row is the
    # call's only accounting row, with no second, free one beside it.
    every_row = ModelCall.objects.filter(
        conversation__rubric_generations__job=job, purpose__startswith="rubric"
    )
    assert every_row.count() == calls.count()


def test_an_offline_batch_job_makes_every_rubric_one_call_further_each_look(played_run):
    job = poll_until_done(launch(played_run, count=2))

    assert job.status == JobStatus.FINISHED
    generations = job.generations.all()
    assert {g.status for g in generations} == {GenerationStatus.FINISHED}
    for generation in generations:
        names = list(generation.stages.values_list("name", flat=True))
        assert names == [
            "routing",
            "retrieval",
            "evidence",
            "facts",
            "intent",
            "synthesis",
            "audit",
        ]
        assert generation.rubric.criteria.exists()
    made = ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk)
    assert made.count() > 1  # the calls depend on each other: one batch per round
    assert set(made.values_list("state", flat=True)) == {BatchState.RECORDED}
    # Both conversations' calls of a round share its batch.
    assert max(len(batch.requests) for batch in made) >= 2
    assert_each_answer_paid_once(job)


# --- through the real SDKs, against the fake server's batch endpoints ------------------------

OPENAI = "openai/gpt-4o-mini"
ANTHROPIC = "anthropic/claude-haiku-4-5"


@pytest.fixture
def stage_server(settings, played_run):
    """The fake server answering each stage of each case of the run as the offline script."""
    answers = {}
    for conversation in played_run.conversations.scorable():
        case = pipeline.case_of(conversation)
        answers[case_marker(case)] = scripted_answers(case, retriever_for("bm25"))
    server = StageServer(answers).start()
    with sdks_served_by(server, settings):
        yield server
    server.stop()


def rubric_calls(job, **filters):
    return ModelCall.objects.filter(
        conversation__rubric_generations__job=job, purpose__startswith="rubric", **filters
    )


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_job_makes_its_rubrics_through_each_sdk_at_the_batch_price(
    played_run, stage_server, model
):
    job = poll_until_done(launch(played_run, model))

    generation = job.generations.get()
    assert generation.status == GenerationStatus.FINISHED, generation.failure_reason
    assert generation.rubric.criteria.exists()
    assert {made.provider for made in stage_server.batches.created} == {model.split("/")[0]}
    paid = rubric_calls(job, cached=False)
    assert all(call.cost_usd * 2 == call.list_cost_usd for call in paid)  # half the price
    generation.refresh_from_db()
    assert generation.cost_usd == sum(call.cost_usd for call in paid) > 0
    # Each call and its tokens counted once (by the replay's read), its price once (the batch's).
    [costs] = generation.model_costs.values()
    assert costs["calls"] == costs["cached"] == paid.count()
    assert (
        costs["input_tokens"] == sum(call.input_tokens for call in paid) == generation.input_tokens
    )
    # The stages read the answers back from the cache: shown as cached, their price on the
    # generation's spend.
    model_stages = generation.stages.exclude(name="retrieval").exclude(status=StageStatus.SKIPPED)
    assert set(model_stages.values_list("cached", flat=True)) == {True}
    assert_each_answer_paid_once(job)


def test_requests_an_expired_batch_never_ran_go_out_in_a_new_batch(played_run, stage_server):
    stage_server.batches.expire_next, stage_server.batches.expired_answered = 1, 0
    job = poll_until_done(launch(played_run, OPENAI))

    first, second, *_ = ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk).order_by("pk")
    assert first.counts["expired"] == len(first.requests)
    assert set(second.requests.values()) == set(first.requests.values())  # the same requests
    assert job.generations.get().status == GenerationStatus.FINISHED
    assert_each_answer_paid_once(job)


def test_with_resend_live_the_unanswered_requests_are_called_live(played_run, stage_server):
    stage_server.batches.expire_next, stage_server.batches.expired_answered = 1, 0
    job = poll_until_done(launch(played_run, OPENAI, batch_resend_live=True))

    first = ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk).order_by("pk").first()
    assert job.generations.get().status == GenerationStatus.FINISHED
    resent = ReplayRequest.objects.filter(pk__in=first.requests.values())
    live = rubric_calls(job, cached=False, conversation__isnull=False).order_by("pk")
    first_calls = live[: resent.count()]
    assert all(call.cost_usd == call.list_cost_usd for call in first_calls)  # the list price
    assert ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk).count() >= 2  # the rest


def test_a_request_that_errors_in_every_batch_fails_its_generation(played_run, stage_server):
    job = launch(played_run, OPENAI)
    generation_batches.generation_batch_poll(job)  # the first round's request is stored
    doomed = ReplayRequest.objects.get(job_kind=KIND, job_id=job.pk)
    stage_server.batches.errored_units = {str(doomed.pk)}
    ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk).delete()  # sent again, erroring
    stage_server.batches.created.clear()

    poll_until_done(job)

    generation = job.generations.get()
    assert generation.status == GenerationStatus.FAILED
    assert generation.failure_reason.startswith("no answer after 3 batches")
    assert generation.failed_stage == "routing"
    assert len(stage_server.batches.created) == 3


def test_an_answer_the_cache_lost_is_read_back_from_its_request_never_bought_again(
    played_run, stage_server
):
    job = launch(played_run, OPENAI)
    for _ in range(4):  # a few rounds answered
        generation_batches.generation_batch_poll(job)
    caches["llm"].clear()  # the response cache loses them all

    poll_until_done(job)

    assert job.generations.get().status == GenerationStatus.FINISHED
    sent = sum(len(made.outcomes) for made in stage_server.batches.created)
    assert sent == ReplayRequest.objects.filter(job_kind=KIND, job_id=job.pk).count()
    assert_each_answer_paid_once(job)


def test_a_batch_job_that_reads_no_cache_moves_on_its_own_answers(played_run, stage_server):
    job = poll_until_done(launch(played_run, OPENAI, use_cache=False))

    assert job.generations.get().status == GenerationStatus.FINISHED
    assert_each_answer_paid_once(job)


# --- launching ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"model": "openai-compatible/local"}, "has no batch API"),
        ({"judge_model": "offline/standard"}, "leave the judge blank"),
    ],
)
def test_a_batch_launch_it_cannot_run_is_refused_with_the_reason(played_run, options, refusal):
    with pytest.raises(pipeline.PipelineLaunchError, match=refusal):
        launch(played_run, **options)


def test_the_replay_client_stores_a_request_it_can_send_again():
    request = ChatRequest(
        model="offline/standard",
        purpose="rubric_routing",
        system="plan",
        messages=(Message(role="user", content="hello"),),
        hints={"stage": "routing"},
        json_schema={"type": "object"},
        sample="s",
    )
    stored = json.loads(json.dumps(replay_batches.request_data(request)))
    assert replay_batches.request_from_data(stored) == request


# --- the launch form, the page, the command, the forecast -------------------------------------


def test_the_launch_form_starts_a_batch_job_whose_page_shows_its_batches(played_run, admin_client_):
    form = {
        "run": played_run.pk, "limit": 1, "generator_model": "offline/standard",
        "judge_model": "", "retriever": "bm25", "top_k": 4, "audit_rounds": 3,
        "use_cache": "on", "batch": "on",
    }  # fmt: skip
    response = admin_client_.post(reverse("rubric_lab:pipeline_new"), form)
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and job.batch and not job.batch_resend_live

    generation_batches.generation_batch_poll(job)  # the watch's first look
    page = admin_client_.get(reverse("rubric_lab:pipeline", args=[job.pk])).content.decode()
    [batch] = ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk)
    assert "Batches" in page and 'id="job-batches"' in page and batch.batch_id in page
    assert "Calls waiting for a batch: 1 · answered: 0" in page  # its first call


def test_ticking_batch_with_the_offered_judge_launches_without_one_and_a_chosen_judge_is_refused(
    played_run, admin_client_
):
    form = {
        "run": played_run.pk, "limit": 1, "generator_model": "offline/standard",
        "judge_model": "offline/standard", "retriever": "bm25", "top_k": 4, "audit_rounds": 3,
        "use_cache": "on", "batch": "on",
    }  # fmt: skip
    chosen = {"judge_model": "offline/flaky"}
    refused = admin_client_.post(reverse("rubric_lab:pipeline_new"), form | chosen)
    assert "leave the judge blank" in refused.content.decode()
    assert not GenerationJob.objects.exists()

    response = admin_client_.post(reverse("rubric_lab:pipeline_new"), form)  # the page's default
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and job.batch and job.judge_model == ""


def test_the_command_launches_a_batch_job_and_refuses_inline_batches(played_run):
    with pytest.raises(CommandError, match="exclude each other"):
        call_command("lab_generate", str(played_run.pk), "--generator", "offline/standard",
                     "--batch", "--inline")  # fmt: skip
    assert not GenerationJob.objects.exists()

    options = ["--limit", "1", "--batch", "--resend-live", "--no-wait"]
    call_command(
        "lab_generate", str(played_run.pk), "--generator", "offline/standard", *options,
        stdout=io.StringIO(),
    )  # fmt: skip

    job = GenerationJob.objects.get()
    assert job.batch and job.batch_resend_live and job.generations.count() == 1


def test_the_forecast_of_a_batch_job_is_at_the_batch_price(played_run, admin_client_):
    earlier = launch(played_run, count=2)
    poll_until_done(earlier)
    options = {"run": played_run, "conversations": 10, "generator_model": ANTHROPIC}

    listed = forecasts.generation_forecast(**options)
    batched = forecasts.generation_forecast(**options, batch=True)

    assert batched.cost.estimate == pytest.approx(listed.cost.estimate / 2)
    assert batched.source.endswith("in batches (batch price)")
    # The earlier batch job's calls are counted once each (not its batch rows and its replay).
    [synthesis] = [role for role in listed.roles if role.role == "stage: synthesis"]
    assert synthesis.figures["calls"].estimate == pytest.approx(10)
    panel = admin_client_.get(
        reverse("rubric_lab:pipeline_forecast"),
        {"run": played_run.pk, "limit": 5, "generator_model": ANTHROPIC, "judge_model": "",
         "retriever": "bm25", "top_k": 4, "audit_rounds": 3, "batch": "on"},
    ).content.decode()  # fmt: skip
    assert "batch price" in panel
