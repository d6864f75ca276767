"""A provider batch's end reaches every active webhook as a signed `batch.ended` event,
written in the transaction that records the end: its job, provider, batch id, how it ended
and its counts (never the model). Played with the offline batch API and the local receiver."""

import pytest
from django.db import transaction

from jobs.models import BatchState, ProviderBatch
from jury.services import juries, scoring, scoring_batches
from tests.support.builders import enriched_set, launched_run, played
from webhooks.models import WebhookDelivery
from webhooks.services.deliveries import delivery_attempt

pytestmark = pytest.mark.django_db


@pytest.fixture
def played_run():
    return played(launched_run(enriched_set(size=1)))


@pytest.fixture
def offline_jury(played_run):
    return juries.jury_demo_ensure()


def test_each_batch_end_is_delivered_once_signed(hook, receiver, played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)
    for _ in range(10):
        scoring_batches.scoring_batch_poll(job)

    batches = ProviderBatch.objects.filter(job_kind="scoring", job_id=job.pk)
    assert set(batches.values_list("state", flat=True)) == {BatchState.RECORDED}
    events = WebhookDelivery.objects.filter(event="batch.ended")
    assert events.count() == batches.count() == len(offline_jury.judges)  # once per batch
    assert {e.job_kind for e in events} == {"jury.scoringjob"}

    for event in events:
        assert delivery_attempt(event.pk) is None
    bodies = [r.body["batch"] for r in receiver.requests if r.body["event"] == "batch.ended"]
    assert all(r.signature_ok for r in receiver.requests)
    assert sorted(b["batch_id"] for b in bodies) == sorted(
        batches.values_list("batch_id", flat=True)
    )
    one = bodies[0]
    assert one["job"]["kind"] == "jury.scoringjob" and one["job"]["id"] == job.pk
    assert one["job"]["url"].endswith(f"/{job.pk}/")
    assert one["provider"] == "offline" and one["state"]
    assert sum(one["counts"].values()) == one["requests"] > 0
    assert all("offline/" not in body for body in events.values_list("body", flat=True))


def test_no_hook_no_event(played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)
    for _ in range(10):
        scoring_batches.scoring_batch_poll(job)
    assert ProviderBatch.objects.filter(job_id=job.pk, state=BatchState.RECORDED).exists()
    assert not WebhookDelivery.objects.filter(event="batch.ended").exists()


def test_an_end_rolled_back_leaves_no_event(hook, played_run, offline_jury):
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)
    scoring_batches.scoring_batch_poll(job)  # sends the batches
    sent = ProviderBatch.objects.filter(job_kind="scoring", job_id=job.pk)
    assert set(sent.values_list("state", flat=True)) == {BatchState.IN_PROGRESS}

    with pytest.raises(RuntimeError), transaction.atomic():
        scoring_batches.scoring_batch_poll(job)  # the batches end and are recorded
        assert WebhookDelivery.objects.filter(event="batch.ended").exists()
        raise RuntimeError("the poller's transaction fails after the end was written")

    assert not WebhookDelivery.objects.filter(event="batch.ended").exists()
    assert set(sent.values_list("state", flat=True)) == {BatchState.IN_PROGRESS}
