"""A run's end in a real worker, on either queue, reaches a webhook whose receiver is down for
a while: the worker's retries wait out the pause (never earlier), and the event arrives
signed once the receiver is back."""

import time

import pytest

from tests.support.builders import enriched_set, launched_run
from tests.support.receiver import Receiver
from tests.support.workers import (
    free_port,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)
from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.services.hooks import webhook_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BACKOFF = 1.0  # seconds before the first retry, then 2, 4...


def test_a_receiver_down_for_a_while_gets_the_event_from_the_workers_retries(
    tmp_path, transport, researcher
):
    run = launched_run(enriched_set(size=1), models=("offline/careful",))  # the worker plays it
    port = free_port()  # nobody listens yet: the first attempts are refused
    hook, secret = webhook_create(owner=researcher, url=f"http://127.0.0.1:{port}/hook")
    extra = {"WEBHOOK_BACKOFF_SECONDS": str(BACKOFF), "WEBHOOK_MAX_ATTEMPTS": "8",
             "WEBHOOK_TICK_SECONDS": "3600"}  # fmt: skip  # only the tasks deliver here
    if transport:
        extra["REDIS_URL"] = transport
    worker = start_worker(worker_env(tmp_path, DATABASE_URL=test_database_url(), **extra))
    receiver = Receiver(secret=secret, port=port)
    try:
        wait_for(
            lambda: _row(run.pk).attempts >= 2, timeout=120, what="the run's end, refused twice"
        )
        delivery_id = _row(run.pk).pk
        refused = _row(run.pk)
        assert refused.status == DeliveryStatus.PENDING and "No answer" in refused.error
        # The pause after the second failure is twice the first.
        gap = (refused.next_attempt_at - refused.last_attempt_at).total_seconds()
        assert gap == pytest.approx(2 * BACKOFF)
        receiver.start()
        wait_for(lambda: _row(run.pk).status != DeliveryStatus.PENDING, timeout=90,
                 what="the delivery once the receiver is back")  # fmt: skip
    finally:
        stop_worker(worker)
        receiver.stop()
    delivered = _row(run.pk)
    assert delivered.status == DeliveryStatus.DELIVERED and delivered.attempts >= 3
    (request,) = receiver.requests
    assert request.signature_ok, request.signature_error
    assert request.body["job"] | {"url": None} == {
        "kind": "benchmark.run", "id": run.pk, "status": "finished", "counts": {"finished": 1},
        "cost_usd": request.body["job"]["cost_usd"], "url": None,
    }  # fmt: skip
    assert delivered.pk == delivery_id
    # Not before its time: the attempt that reached it came after the pause it waited out.
    assert request.at >= refused.next_attempt_at.timestamp() - 0.001
    assert time.time() >= request.at


def _row(run_id: int) -> WebhookDelivery:
    """The delivery of the run's end (a blank one until the worker ended the run)."""
    found = WebhookDelivery.objects.filter(job_kind="benchmark.run", job_id=run_id).first()
    return found or WebhookDelivery(attempts=0, status=DeliveryStatus.PENDING)
