"""Scoring in batch mode: the judge calls go through the batch APIs (offline scripts, and the
real OpenAI and Anthropic SDKs against the fake server's batch endpoints), are recorded as the
batches end, at the batch price, and a poller killed half-way loses nothing and pays nothing
twice; expired and errored requests go out again in a new batch."""

import json
from decimal import Decimal
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from benchmark.models import ModelCall
from jobs import tasks as job_tasks
from jobs.models import BatchState, JobStatus, ProviderBatch
from jobs.services import accounting, batch_jobs, batches
from jury.models import ScoreStatus, ScoringJob
from jury.services import juries, scoring, scoring_batches
from llm.clients import model_router
from llm.engine.providers.batches import BatchReceipt
from llm.services import endpoints
from tests.fakes.llm_server import FakeReply, running_fake_llm_server
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

VERDICT = json.dumps({"score": 4, "explanation": "Booked the visit and confirmed it at #9."})


@pytest.fixture
def fake(settings):
    with running_fake_llm_server(default_text=VERDICT) as server, sdks_served_by(server, settings):
        yield server


def batch_job(run, judges, *, use_cache=False, name="Batch jury"):
    jury = juries.jury_create(name=name, judges=judges)
    return scoring.scoring_launch(run=run, jury=jury, use_cache=use_cache, batch=True)


def poll_until_done(job, *, polls=10):
    for _ in range(polls):
        scoring_batches.scoring_batch_poll(job)
        job.refresh_from_db()
        if job.status != JobStatus.RUNNING:
            return job
    raise AssertionError(f"the job still runs after {polls} polls")


def calls_per_score(job) -> list[int]:
    return list(job.scores.values_list("calls", flat=True))


def assert_each_answer_paid_once(job):
    assert set(calls_per_score(job)) == {1}
    run_calls = ModelCall.objects.filter(
        run=job.run, purpose="judge", created_at__gte=job.created_at
    )
    assert run_calls.count() == job.scores.count()


def test_an_offline_batch_job_scores_every_conversation(played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)

    poll_until_done(job)

    assert job.status == JobStatus.FINISHED
    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert ProviderBatch.objects.filter(job_id=job.pk, state=BatchState.RECORDED).count() == len(
        offline_jury.judges
    )
    assert_each_answer_paid_once(job)
    assert (
        job.conversation_results.filter(complete=True).count() == played_run.conversations.count()
    )


def test_a_batch_job_is_refused_for_a_judge_without_a_batch_api(played_run):
    jury = juries.jury_create(name="Local", judges=["openai-compatible/judge-7b"])
    with pytest.raises(scoring.ScoringError, match="batch API"):
        scoring.scoring_launch(run=played_run, jury=jury, batch=True)


def test_an_openai_batch_is_priced_at_half_the_live_price(played_run, fake):
    fake.batches.polls_in_progress = 1
    fake.responder = lambda request: FakeReply(
        text=VERDICT, input_tokens=100_000, output_tokens=10_000
    )
    job = batch_job(played_run, ["openai/gpt-4o-mini"])

    scoring_batches.scoring_batch_poll(job)  # sends the batch
    scoring_batches.scoring_batch_poll(job)  # still in progress
    [batch] = ProviderBatch.objects.filter(job_id=job.pk)
    assert batch.state == BatchState.IN_PROGRESS
    assert batch.counts == {"processing": job.scores.count()}
    poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    batch.refresh_from_db()
    assert batch.state == BatchState.RECORDED
    assert batch.counts == {"succeeded": job.scores.count()}
    row = job.scores.first()
    live = Decimal("0.021")  # 100,000 in at $0.15 and 10,000 out at $0.60 a million
    assert row.cost_usd == Decimal("0.0105")
    assert row.list_cost_usd == live
    assert_each_answer_paid_once(job)


def test_an_anthropic_batch_scores_through_the_message_batches_api(played_run, fake):
    job = batch_job(played_run, ["anthropic/claude-haiku-4-5"])

    poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    [made] = fake.batches.created
    assert made.provider == "anthropic"
    assert len(made.outcomes) == job.scores.count()
    assert_each_answer_paid_once(job)


def test_an_expired_batch_is_sent_again_for_the_requests_it_never_ran(played_run, fake):
    fake.batches.expire_next, fake.batches.expired_answered = 1, 3
    job = batch_job(played_run, ["openai/gpt-4o-mini"])

    poll_until_done(job)

    first, second = ProviderBatch.objects.filter(job_id=job.pk).order_by("pk")
    assert first.detail == "expired"
    assert first.counts["expired"] == job.scores.count() - 3
    assert len(second.requests) == job.scores.count() - 3
    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)


def test_with_resend_live_what_a_batch_left_unanswered_is_judged_live(played_run, fake):
    fake.batches.expire_next, fake.batches.expired_answered = 1, 2
    jury = juries.jury_create(name="Live resend", judges=["anthropic/claude-haiku-4-5"])
    job = scoring.scoring_launch(
        run=played_run, jury=jury, use_cache=False, batch=True, batch_resend_live=True
    )

    poll_until_done(job)

    assert job.batch_resend_live and len(fake.batches.created) == 1
    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)
    calls = ModelCall.objects.filter(run=job.run, purpose="judge").order_by("pk")
    batch_priced = [call.cost_usd < call.list_cost_usd for call in calls]
    assert batch_priced == [True] * 2 + [False] * (job.scores.count() - 2)


def test_resend_live_is_kept_only_for_a_batch_job(played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, batch_resend_live=True)
    assert not job.batch_resend_live


def test_a_request_that_errors_in_every_batch_ends_as_an_error(played_run, fake):
    job = batch_job(played_run, ["anthropic/claude-haiku-4-5"])
    doomed = job.scores.order_by("pk").first()
    fake.batches.errored_units = {str(doomed.pk)}

    poll_until_done(job)

    doomed.refresh_from_db()
    assert doomed.status == ScoreStatus.ERROR
    assert "api_error" in doomed.error
    assert len(fake.batches.created) == batch_jobs.BATCH_ATTEMPTS
    assert job.scores.filter(status=ScoreStatus.VALID).count() == job.scores.count() - 1


def test_a_poller_killed_while_recording_loses_nothing_and_pays_nothing_twice(played_run, fake):
    job = batch_job(played_run, ["openai/gpt-4o-mini"])
    scoring_batches.scoring_batch_poll(job)  # sends the batch
    recorded = scoring_batches._answers_store
    chunks = []

    def killed_after_one_chunk(job, answers):
        if chunks:
            raise SystemExit("killed")
        chunks.append(answers)
        return recorded(job, answers)

    with (
        mock.patch.object(batches, "RECORD_CHUNK", 5),
        mock.patch.object(scoring_batches, "_answers_store", killed_after_one_chunk),
        pytest.raises(SystemExit),
    ):
        scoring_batches.scoring_batch_poll(job)
    assert job.scores.filter(status=ScoreStatus.VALID).count() == 5
    # The dead poller's lease runs out; the next poller reads the whole batch again.
    scoring_batches.batches.BatchPollLease.objects.update(held_until=None)
    poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert len(fake.batches.created) == 1
    assert_each_answer_paid_once(job)
    keys = ModelCall.objects.values("answer_key").annotate(n=Count("id")).filter(n__gt=1)
    assert not keys.exists()


def test_a_poller_killed_inside_a_chunk_commits_none_of_it(played_run, fake):
    job = batch_job(played_run, ["openai/gpt-4o-mini"])
    scoring_batches.scoring_batch_poll(job)  # sends the batch
    written = accounting.answers_record

    def killed_after_the_accounting_rows(rows):
        written(rows)
        raise SystemExit("killed")

    with (
        mock.patch.object(accounting, "answers_record", killed_after_the_accounting_rows),
        pytest.raises(SystemExit),
    ):
        scoring_batches.scoring_batch_poll(job)
    assert not ModelCall.objects.filter(purpose="judge").exists()
    assert not job.scores.exclude(status=ScoreStatus.PENDING).exists()
    scoring_batches.batches.BatchPollLease.objects.update(held_until=None)
    poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)
    assert ModelCall.objects.filter(purpose="judge").count() == job.scores.count()


def test_recording_takes_a_fixed_few_statements_per_chunk_whatever_its_size(
    played_run, fake, monkeypatch
):
    """Issue 34: an ended batch's answers are recorded a chunk at a time (a lock, a key check,
    one INSERT of the accounting rows, one UPDATE of the scores), not statement by answer."""
    # The endpoint list is read again every few seconds (llm.services.endpoints): on a busy
    # machine that read fell inside one chunk's count and not the other's.
    endpoints.endpoints_in_force()
    monkeypatch.setattr(endpoints, "REFRESH_SECONDS", 3600.0)
    job = batch_job(played_run, ["openai/gpt-4o-mini"])
    scoring_batches.scoring_batch_poll(job)  # sends the batch
    scores = job.scores.count()
    assert scores >= 8
    batch = ProviderBatch.objects.get(job_id=job.pk)
    requests = scoring_batches._requests_of(job, batch)
    receipts = {cid: BatchReceipt.from_data(data) for cid, data in batch.receipts.items()}
    client = model_router(False).client_for(batch.model)
    results = [
        (result, receipts[result.custom_id])
        for result in client.batch_results(batch.batch_id, requests, receipts)
    ]
    statements = []
    for size in (2, 4, scores):
        with CaptureQueriesContext(connection) as captured:
            scoring_batches._results_record(job, batch, results[:size])
        statements.append(len(captured))
        results = results[size:]
        if not results:
            break

    assert statements[0] == statements[1] <= 8
    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)


@pytest.mark.parametrize("judge", ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"])
def test_reading_a_batchs_answers_builds_no_judge_prompt_again(played_run, fake, judge):
    """Issue 34: a judge prompt is rendered once, to send it. Its answer is read with the
    receipt kept then (cache key, seed, prompt hash), and scored as the live path scores it."""
    job = batch_job(played_run, [judge], use_cache=True)
    scoring_batches.scoring_batch_poll(job)  # sends the batch
    sent = {score.pk: score.prompt_hash for score in job.scores.all()}
    assert set(sent.values()) == {""}
    with mock.patch.object(scoring_batches, "judge_inputs", side_effect=AssertionError("built")):
        poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)
    live = scoring.scoring_launch(run=played_run, jury=job.jury, use_cache=False, batch=False)
    for score in job.scores.all():
        twin = live.scores.get(conversation=score.conversation, rubric_version=score.rubric_version)
        request = scoring.score_request(twin, scoring_batches.judge_inputs(score.conversation))
        assert score.prompt_hash == scoring_batches._prompt(request)
        # The batch's answer filled the cache under the very key the request looks up.
        asked = scoring_batches.json_request(request, scoring_batches.JUDGE_ANSWER_SCHEMA)
        cached = model_router(True).client_for(judge).cached_answer(asked)
        assert cached is not None and cached.text == VERDICT


def test_a_batch_sent_before_receipts_were_kept_is_recorded_the_same(played_run, fake):
    """A batch still out when the site was upgraded has no receipts: its requests are built
    again to read its answers, and the scores come out as a batch with receipts gives them."""
    with_receipts = batch_job(played_run, ["openai/gpt-4o-mini"], name="with")
    poll_until_done(with_receipts)
    without = batch_job(played_run, ["openai/gpt-4o-mini"], name="without")
    scoring_batches.scoring_batch_poll(without)  # sends the batch
    ProviderBatch.objects.filter(job_id=without.pk, job_kind="scoring").update(receipts={})
    poll_until_done(without)

    def outcome(job):
        fields = ("conversation", "rubric_version", "status", "score", "prompt_hash", "attempts")
        return sorted(job.scores.values_list(*fields))

    assert outcome(without) == outcome(with_receipts)
    assert_each_answer_paid_once(without)


def test_an_old_batch_whose_unit_is_gone_records_the_others(played_run, fake):
    """A batch without receipts has its requests built again, and a unit deleted since has
    none: its answer is skipped, as before receipts, not a fault of every later poll."""
    job = batch_job(played_run, ["openai/gpt-4o-mini"])
    scoring_batches.scoring_batch_poll(job)  # sends the batch
    ProviderBatch.objects.filter(job_id=job.pk, job_kind="scoring").update(receipts={})
    gone = job.scores.order_by("pk").first()
    gone.delete()

    poll_until_done(job)

    assert not job.scores.exclude(status=ScoreStatus.VALID).exists()
    assert_each_answer_paid_once(job)


def test_a_rescore_is_answered_from_the_cache_the_batch_filled(played_run, fake, settings):
    first = batch_job(played_run, ["openai/gpt-4o-mini"], use_cache=True)
    poll_until_done(first)

    again = scoring.scoring_launch(run=played_run, jury=first.jury, use_cache=True, batch=True)
    poll_until_done(again)

    assert len(fake.batches.created) == 1
    assert not again.scores.exclude(status=ScoreStatus.VALID).exists()
    assert set(again.scores.values_list("cached", flat=True)) == {True}
    assert set(again.scores.values_list("cost_usd", flat=True)) == {Decimal(0)}


def test_a_second_poller_waits_while_the_first_holds_the_job(played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)
    token = scoring_batches.batches.poll_lease_claim("scoring", job.pk)

    scoring_batches.scoring_batch_poll(job)

    assert not ProviderBatch.objects.filter(job_id=job.pk).exists()
    scoring_batches.batches.poll_lease_release("scoring", job.pk, token)
    scoring_batches.scoring_batch_poll(job)
    assert ProviderBatch.objects.filter(job_id=job.pk).exists()


def test_score_run_batch_launches_a_batch_job_and_leaves_the_upload_to_a_worker(
    played_run, offline_jury, django_capture_on_commit_callbacks
):
    with (
        mock.patch("jobs.tasks.job_watch_task.delay") as watch,
        django_capture_on_commit_callbacks(execute=True),
    ):
        call_command("score_run", str(played_run.pk), "--jury", offline_jury.name, "--batch")
    job = ScoringJob.objects.latest("created_at")

    assert job.batch
    watch.assert_called_once_with("scoring", job.pk)
    assert not ProviderBatch.objects.filter(job_id=job.pk).exists()  # none sent inline


def test_the_api_launches_a_batch_job_and_lists_its_batches(
    played_run, offline_jury, researcher_client
):
    response = researcher_client.post(
        "/api/v1/scoring-jobs",
        {"run": played_run.pk, "jury": offline_jury.pk, "batch": True, "use_cache": False},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    job = ScoringJob.objects.get(pk=response.json()["id"])
    assert job.batch
    poll_until_done(job)

    listed = researcher_client.get(f"/api/v1/scoring-jobs/{job.pk}").json()

    assert listed["batch"] and len(listed["batches"]) == len(offline_jury.judges)
    assert {batch["state"] for batch in listed["batches"]} == {"Recorded"}


@pytest.mark.django_db
def test_a_job_waiting_on_batches_is_looked_at_every_batch_poll_interval(monkeypatch, settings):
    settings.BATCH_POLL_SECONDS, settings.CONVERSATION_LEASE_SECONDS = 20, 900
    countdowns = []
    monkeypatch.setattr(
        job_tasks.job_watch_task,
        "apply_async",
        lambda args, countdown: countdowns.append(countdown),
    )
    job_tasks.watch_later("scoring", 41)
    ProviderBatch.objects.create(
        job_kind="scoring", job_id=41, provider="openai", model="openai/gpt-4.1",
        state=BatchState.IN_PROGRESS,
    )  # fmt: skip
    job_tasks.watch_later("scoring", 41)
    settings.CONVERSATION_LEASE_SECONDS = 10  # a lease shorter than the poll: looked at sooner
    job_tasks.watch_later("scoring", 41)
    assert countdowns == [450, 20, 5]  # half a lease, the batch poll, the shorter of the two
