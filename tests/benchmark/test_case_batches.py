"""Case enrichment in batch mode: a set's enrichment calls go through the batch APIs (offline
scripts, and the real OpenAI and Anthropic SDKs against the fake server's batch endpoints),
are recorded as the batches end, at the batch price; unanswered requests go out again in a
new batch or live; a batch made by a worker that died before storing its id is found and
adopted, never sent and paid twice."""

from datetime import timedelta
from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import caches
from django.core.management import call_command
from django.db.models import Count, F

from benchmark.models import BenchmarkSet, EntryStatus, ModelCall
from benchmark.services import case_batches, cases
from jobs.models import BatchPollLease, BatchState, JobStatus, ProviderBatch
from jobs.services import batch_jobs, batches
from llm.clients import model_router
from llm.engine.chat import ProviderError
from llm.engine.providers.client import ModelClient
from tests.benchmark.conftest import SET_SIZE
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import entry_answers
from tests.support.fake_sdks import sdks_served_by

pytestmark = pytest.mark.django_db

OPENAI = "openai/gpt-4o-mini"
ANTHROPIC = "anthropic/claude-haiku-4-5"


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Every test asks its batches afresh: an earlier test of the session that enriched the
    same samples would otherwise answer them all from the response cache, and no batch go out."""
    caches["llm"].clear()


@pytest.fixture
def fake(settings):
    with running_fake_llm_server() as server, sdks_served_by(server, settings):
        yield server


def batch_set(distribution, model, *, resend_live=False, size=SET_SIZE, seed=7):
    return cases.benchmark_set_create(
        name=f"Batch {model}",
        distribution=distribution,
        size=size,
        sampler_seed=seed,
        generator_model=model,
        batch=True,
        batch_resend_live=resend_live,
    )


def poll_until_done(benchmark_set, *, polls=10):
    for _ in range(polls):
        case_batches.enrichment_batch_poll(benchmark_set)
        benchmark_set.refresh_from_db()
        if benchmark_set.status != JobStatus.RUNNING:
            return benchmark_set
    raise AssertionError(f"the set still runs after {polls} polls")


def assert_each_answer_paid_once(benchmark_set):
    assert set(benchmark_set.entries.values_list("attempts", flat=True)) == {1}
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set, purpose="enrichment")
    assert calls.count() == benchmark_set.size
    assert not calls.values("answer_key").annotate(n=Count("id")).filter(n__gt=1).exists()


def statuses(benchmark_set) -> set[str]:
    return set(benchmark_set.entries.values_list("status", flat=True))


def test_an_offline_batch_set_enriches_every_entry(distribution):
    benchmark_set = batch_set(distribution, "offline/standard")

    poll_until_done(benchmark_set)

    assert benchmark_set.status == JobStatus.FINISHED
    assert statuses(benchmark_set) == {EntryStatus.READY}
    [batch] = ProviderBatch.objects.filter(job_kind="set", job_id=benchmark_set.pk)
    assert batch.state == BatchState.RECORDED and len(batch.requests) == SET_SIZE
    assert all(custom_id.startswith(f"{batch.tag}-") for custom_id in batch.requests)
    assert_each_answer_paid_once(benchmark_set)


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_set_is_enriched_through_each_sdk_at_the_batch_price(distribution, fake, model):
    benchmark_set = batch_set(distribution, model)
    fake.responder = entry_answers(benchmark_set)

    poll_until_done(benchmark_set)

    assert statuses(benchmark_set) == {EntryStatus.READY}
    [made] = fake.batches.created
    assert made.provider == model.split("/")[0] and len(made.outcomes) == SET_SIZE
    call = ModelCall.objects.filter(benchmark_set=benchmark_set).first()
    assert call.cost_usd * 2 == call.list_cost_usd  # half the price
    assert_each_answer_paid_once(benchmark_set)


def test_an_unusable_batch_answer_fails_its_entry_unrepaired(distribution, fake):
    benchmark_set = batch_set(distribution, OPENAI)
    fake.responder = entry_answers(benchmark_set, broken={0})

    poll_until_done(benchmark_set)

    broken = benchmark_set.entries.get(index=0)
    assert broken.status == EntryStatus.FAILED
    assert "invalid (batch)" in broken.failure_reason and "patient_story" in broken.failure_reason
    assert benchmark_set.entries.filter(status=EntryStatus.READY).count() == SET_SIZE - 1
    assert len(fake.batches.created) == 1


def test_requests_an_expired_batch_never_ran_go_out_in_a_new_batch(distribution, fake):
    fake.batches.expire_next, fake.batches.expired_answered = 1, 1
    benchmark_set = batch_set(distribution, ANTHROPIC)
    fake.responder = entry_answers(benchmark_set)

    poll_until_done(benchmark_set)

    first, second = ProviderBatch.objects.filter(job_id=benchmark_set.pk).order_by("pk")
    assert first.counts["expired"] == SET_SIZE - 1
    assert len(second.requests) == SET_SIZE - 1
    assert statuses(benchmark_set) == {EntryStatus.READY}
    assert_each_answer_paid_once(benchmark_set)


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_with_resend_live_the_unanswered_requests_are_called_live(distribution, fake, model):
    fake.batches.expire_next, fake.batches.expired_answered = 1, 1
    benchmark_set = batch_set(distribution, model, resend_live=True)
    fake.responder = entry_answers(benchmark_set)

    poll_until_done(benchmark_set)

    assert len(fake.batches.created) == 1  # no second batch
    assert statuses(benchmark_set) == {EntryStatus.READY}
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set)
    assert calls.count() == SET_SIZE
    batch_call, *live_calls = calls.order_by("pk")
    assert batch_call.cost_usd * 2 == batch_call.list_cost_usd
    assert all(call.cost_usd == call.list_cost_usd for call in live_calls)  # list price


def test_a_request_that_errors_in_every_batch_fails_its_entry(distribution, fake):
    benchmark_set = batch_set(distribution, OPENAI)
    fake.responder = entry_answers(benchmark_set)
    doomed = benchmark_set.entries.order_by("pk").first()
    fake.batches.errored_units = {str(doomed.pk)}

    poll_until_done(benchmark_set)

    doomed.refresh_from_db()
    assert doomed.status == EntryStatus.FAILED
    assert doomed.failure_reason.startswith(f"no answer after {batch_jobs.BATCH_ATTEMPTS} batches")
    assert len(fake.batches.created) == batch_jobs.BATCH_ATTEMPTS


# --- a worker killed between the provider making the batch and our storing its id ----------


def killed_once_the_batch_is_made():
    submit = ModelClient.batch_submit

    def made_then_killed(self, *args, **kwargs):
        submit(self, *args, **kwargs)
        raise SystemExit("killed before the batch id was stored")

    return mock.patch.object(ModelClient, "batch_submit", made_then_killed)


def time_passes(fake=None, *, seconds=None):
    """The dead worker's lease runs out (by default): its rows, and the batches the provider
    made, are that much older."""
    seconds = settings.CONVERSATION_LEASE_SECONDS + 1 if seconds is None else seconds
    BatchPollLease.objects.update(held_until=None)
    ProviderBatch.objects.update(submitted_at=F("submitted_at") - timedelta(seconds=seconds))
    for made in fake.batches.created if fake else ():
        made.created_at -= seconds


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_whose_id_was_never_stored_is_adopted_not_sent_again(distribution, fake, model):
    benchmark_set = batch_set(distribution, model)
    fake.responder = entry_answers(benchmark_set)
    with killed_once_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)
    [orphan] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert orphan.state == BatchState.SUBMITTING and not orphan.batch_id
    assert bool(orphan.input_file_id) == model.startswith("openai/")
    time_passes(fake)

    poll_until_done(benchmark_set)

    orphan.refresh_from_db()
    assert orphan.batch_id == fake.batches.created[0].id
    assert orphan.state == BatchState.RECORDED
    assert len(fake.batches.created) == 1
    assert statuses(benchmark_set) == {EntryStatus.READY}
    assert_each_answer_paid_once(benchmark_set)


def test_an_orphan_waits_while_a_running_anthropic_batch_may_be_it(distribution, fake):
    fake.batches.polls_in_progress = 1
    benchmark_set = batch_set(distribution, ANTHROPIC)
    fake.responder = entry_answers(benchmark_set)
    with killed_once_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)
    time_passes(fake)

    case_batches.enrichment_batch_poll(benchmark_set)

    [orphan] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert orphan.state == BatchState.SUBMITTING and orphan.detail == "looking for it"
    fake.batches.polls_in_progress = 0  # the batch ends
    poll_until_done(benchmark_set)
    assert len(fake.batches.created) == 1
    assert_each_answer_paid_once(benchmark_set)


def test_an_orphan_the_provider_never_made_is_lost_and_sent_again(distribution):
    # Seeds of their own: the cache (shared by the tests of this process) cannot answer them.
    benchmark_set = batch_set(distribution, "offline/standard", seed=8)
    with killed_once_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)
    time_passes()

    poll_until_done(benchmark_set)

    lost, sent = ProviderBatch.objects.filter(job_id=benchmark_set.pk).order_by("pk")
    assert lost.state == BatchState.LOST and sent.state == BatchState.RECORDED
    assert statuses(benchmark_set) == {EntryStatus.READY}
    assert_each_answer_paid_once(benchmark_set)


def killed_before_the_batch_is_made():
    def killed(self, *args, **kwargs):
        raise SystemExit("killed before the provider was asked")

    return mock.patch.object(ModelClient, "batch_submit", killed)


def test_an_orphan_is_left_to_its_submitter_for_a_lease(distribution):
    benchmark_set = batch_set(distribution, "offline/standard", seed=20)
    with killed_once_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)

    case_batches.enrichment_batch_poll(benchmark_set)  # the lease was let go, but too soon

    [orphan] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert orphan.state == BatchState.SUBMITTING and orphan.detail == "waiting for its submitter"


def test_a_running_batch_made_after_the_orphans_submit_does_not_hold_it_up(distribution, fake):
    fake.batches.polls_in_progress = 100  # every batch keeps running
    benchmark_set = batch_set(distribution, ANTHROPIC, seed=21)
    with killed_before_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)
    time_passes(seconds=3600)
    other = batch_set(distribution, ANTHROPIC, seed=22)  # another job's batch, an hour later
    case_batches.enrichment_batch_poll(other)

    case_batches.enrichment_batch_poll(benchmark_set)

    orphan, resent = ProviderBatch.objects.filter(job_id=benchmark_set.pk).order_by("pk")
    assert orphan.state == BatchState.LOST
    assert resent.state == BatchState.IN_PROGRESS and resent.requests.keys()
    assert len(fake.batches.created) == 2


def test_an_orphan_still_undecided_after_the_deadline_is_lost(distribution, fake):
    fake.batches.polls_in_progress = 100  # the provider never lets its batch end
    benchmark_set = batch_set(distribution, ANTHROPIC, seed=23)
    fake.responder = entry_answers(benchmark_set)
    with killed_once_the_batch_is_made(), pytest.raises(SystemExit):
        case_batches.enrichment_batch_poll(benchmark_set)
    time_passes(fake)
    case_batches.enrichment_batch_poll(benchmark_set)
    [orphan] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert orphan.state == BatchState.SUBMITTING and orphan.detail == "looking for it"
    time_passes(fake, seconds=int(batches.ADOPTION_DEADLINE.total_seconds()))

    case_batches.enrichment_batch_poll(benchmark_set)

    orphan.refresh_from_db()
    assert orphan.state == BatchState.LOST and "within 25 hours" in orphan.error


@pytest.mark.parametrize("model", [OPENAI, ANTHROPIC])
def test_a_batch_made_though_its_create_got_no_answer_is_adopted(distribution, fake, model):
    fake.batches.unanswered_creates = 1
    benchmark_set = batch_set(distribution, model, seed=24)
    fake.responder = entry_answers(benchmark_set)

    case_batches.enrichment_batch_poll(benchmark_set)

    [row] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert row.state == BatchState.SUBMITTING and "504" in row.error
    time_passes(fake)
    poll_until_done(benchmark_set)
    row.refresh_from_db()
    assert row.state == BatchState.RECORDED and row.batch_id == fake.batches.created[0].id
    assert len(fake.batches.created) == 1
    assert_each_answer_paid_once(benchmark_set)


def test_a_submitter_whose_row_was_taken_over_meanwhile_leaves_it(distribution):
    submit = ModelClient.batch_submit

    def slow_submit(self, requests, *, tag, uploaded=None):
        batch_id = submit(self, requests, tag=tag, uploaded=uploaded)
        # Meanwhile another poller found no batch for the row and sent its units again.
        ProviderBatch.objects.filter(tag=tag).update(state=BatchState.LOST, error="taken over")
        return batch_id

    benchmark_set = batch_set(distribution, "offline/standard", seed=25)
    with mock.patch.object(ModelClient, "batch_submit", slow_submit):
        case_batches.enrichment_batch_poll(benchmark_set)

    [row] = ProviderBatch.objects.filter(job_id=benchmark_set.pk)
    assert row.state == BatchState.LOST and row.error == "taken over" and not row.batch_id


def test_a_poller_that_lost_its_lease_sends_no_batch(distribution):
    benchmark_set = batch_set(distribution, "offline/standard", seed=26)
    held_then_lost = mock.patch.object(batches, "poll_lease_extend", side_effect=[True, False])

    with held_then_lost:
        case_batches.enrichment_batch_poll(benchmark_set)

    assert not ProviderBatch.objects.filter(job_id=benchmark_set.pk).exists()
    assert statuses(benchmark_set) == {EntryStatus.PENDING}


def refused_first(times):
    submit, refusals = ModelClient.batch_submit, iter(range(times))

    def refusing(self, *args, **kwargs):
        if next(refusals, None) is not None:
            raise ProviderError("HTTP 429: too many batches", kind="rate_limit", status=429)
        return submit(self, *args, **kwargs)

    return mock.patch.object(ModelClient, "batch_submit", refusing)


def test_a_refused_batch_is_no_attempt_so_resend_live_waits_for_a_real_one(distribution, fake):
    benchmark_set = batch_set(distribution, OPENAI, resend_live=True, seed=27)
    fake.responder = entry_answers(benchmark_set)

    with refused_first(1):
        poll_until_done(benchmark_set)

    refused, sent = ProviderBatch.objects.filter(job_id=benchmark_set.pk).order_by("pk")
    assert refused.state == BatchState.LOST and "429" in refused.error
    assert sent.state == BatchState.RECORDED and len(fake.batches.created) == 1
    calls = ModelCall.objects.filter(benchmark_set=benchmark_set)
    assert all(call.cost_usd * 2 == call.list_cost_usd for call in calls)  # none live
    assert statuses(benchmark_set) == {EntryStatus.READY}


def test_a_unit_whose_batch_is_refused_every_time_fails(distribution):
    benchmark_set = batch_set(distribution, "offline/standard", seed=28)

    with refused_first(100):
        poll_until_done(benchmark_set)

    entry = benchmark_set.entries.first()
    assert entry.status == EntryStatus.FAILED
    assert entry.failure_reason.startswith(f"no batch made in {batch_jobs.BATCH_ATTEMPTS} tries")
    assert "429" in entry.failure_reason


def test_a_batch_end_is_announced_once_by_two_pollers(distribution):
    benchmark_set = batch_set(distribution, "offline/standard", seed=29)
    case_batches.enrichment_batch_poll(benchmark_set)  # sent; an offline batch ends at once
    first, second = (ProviderBatch.objects.get(job_id=benchmark_set.pk) for _ in range(2))
    client = model_router(True).client_for("offline/standard")

    with mock.patch.object(batches, "batch_ended_send") as announced:
        for seen in (first, second):  # both read it in progress
            batches.batch_poll(seen, client, requests_of=lambda _: {}, record=mock.Mock())

    announced.assert_called_once()
    second.refresh_from_db()
    assert second.state == BatchState.RECORDED


# --- launching -----------------------------------------------------------------------------


def test_a_batch_set_is_refused_for_a_model_without_a_batch_api(distribution):
    with pytest.raises(cases.BenchmarkSetError, match="batch API"):
        batch_set(distribution, "openai-compatible/enricher-7b")


def test_generate_set_batch_leaves_the_upload_to_a_worker(
    distribution, django_capture_on_commit_callbacks
):
    with (
        mock.patch("jobs.tasks.job_watch_task.delay") as watch,
        django_capture_on_commit_callbacks(execute=True),
    ):
        call_command("generate_set", "--name", "Batch CLI", "--size", "2", "--batch",
                     "--resend-live", "--no-wait")  # fmt: skip
    benchmark_set = BenchmarkSet.objects.get(name="Batch CLI")

    assert benchmark_set.batch and benchmark_set.batch_resend_live
    watch.assert_called_once_with("set", benchmark_set.pk)
    assert not ProviderBatch.objects.filter(job_id=benchmark_set.pk).exists()


def test_the_api_launches_a_batch_set_and_lists_its_batches(distribution, researcher_client):
    with mock.patch("jobs.tasks.job_watch_task.delay"):
        response = researcher_client.post(
            "/api/v1/case-sets",
            {"name": "Batch API", "size": 2, "batch": True},
            content_type="application/json",
        )
    assert response.status_code == 201, response.content
    benchmark_set = BenchmarkSet.objects.get(pk=response.json()["id"])
    assert benchmark_set.batch and not benchmark_set.batch_resend_live
    poll_until_done(benchmark_set)

    listed = researcher_client.get(f"/api/v1/case-sets/{benchmark_set.pk}").json()

    assert listed["batch"] and [b["state"] for b in listed["batches"]] == ["Recorded"]


def test_the_set_page_shows_its_mode_and_batches(distribution, client, researcher):
    benchmark_set = batch_set(distribution, "offline/standard", resend_live=True, seed=9)
    poll_until_done(benchmark_set)
    client.force_login(researcher)

    page = client.get(f"/benchmark/sets/{benchmark_set.pk}/").content.decode()

    assert "about half the price" in page and "failures resent live" in page
    assert 'id="job-batches"' in page and "Recorded" in page
