"""A provider batch's end reaches every active webhook as a signed `batch.ended` event,
written in the transaction that records the end: its job, provider, batch id, how it ended
and its counts (never the model). Played with the offline batch API and the local receiver."""

import pytest

from jobs.models import BatchState, ProviderBatch
from jury.services import scoring, scoring_batches
from tests.jury.services.builders import offline_jury, played_run, world  # noqa: F401
from webhooks.models import WebhookDelivery
from webhooks.services.deliveries import delivery_attempt

pytestmark = pytest.mark.django_db


def test_each_batch_end_is_delivered_once_signed(hook, receiver, played_run, offline_jury):  # noqa: F811
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


def test_no_hook_no_event(played_run, offline_jury):  # noqa: F811
    job = scoring.scoring_launch(run=played_run, jury=offline_jury, use_cache=False, batch=True)
    for _ in range(10):
        scoring_batches.scoring_batch_poll(job)
    assert ProviderBatch.objects.filter(job_id=job.pk, state=BatchState.RECORDED).exists()
    assert not WebhookDelivery.objects.filter(event="batch.ended").exists()
