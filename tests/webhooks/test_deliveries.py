"""A job's end reaches every active webhook as signed JSON, with retries after a pause that
doubles, against a local receiver that checks every signature. The clock is passed in, so
the schedule is checked exactly and nothing waits."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from jobs.models import JobStatus
from jobs.services.finish import job_finish
from jobs.signals import job_ended_send
from tests.support.builders import enriched_set, launched_run
from tests.support.receiver import Receiver
from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.services.deliveries import deliveries_due, delivery_attempt, ping_record
from webhooks.services.hooks import webhook_create, webhook_url_check

pytestmark = pytest.mark.django_db


def a_running_run():
    run = launched_run(enriched_set(size=1), models=("offline/careful",))
    # The set's own end was an event too (tested below): only the run's matter here.
    WebhookDelivery.objects.filter(job_kind="benchmark.benchmarkset").delete()
    run.status = JobStatus.RUNNING
    run.save(update_fields=["status"])
    return run


def test_a_jobs_end_is_delivered_signed_with_its_counts_cost_and_link(hook, receiver):
    run = a_running_run()
    assert job_finish(run)
    (delivery,) = WebhookDelivery.objects.all()
    assert (delivery.event, delivery.job_kind, delivery.job_id) == (
        "job.finished",
        "benchmark.run",
        run.pk,
    )

    assert delivery_attempt(delivery.pk) is None
    (request,) = receiver.requests
    assert request.signature_ok, request.signature_error
    assert request.headers["carejury-event"] == "job.finished"
    assert request.headers["carejury-delivery"] == str(delivery.event_id)
    body = request.body
    assert body["event"] == "job.finished" and body["id"] == str(delivery.event_id)
    job = body["job"]
    assert (job["kind"], job["id"], job["status"]) == ("benchmark.run", run.pk, "finished")
    assert job["counts"] == {"pending": 1} and job["cost_usd"] == 0.0
    assert job["url"].endswith(f"/benchmark/runs/{run.pk}/")
    # No model string, name or free text rides along.
    raw = WebhookDelivery.objects.get().body
    assert "offline/" not in raw and run.name not in raw
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 1, 200)
    assert delivery.response_excerpt == "answered 200"


def test_a_failed_job_and_a_case_sets_end_are_events_too(hook):
    run = a_running_run()
    enriched_set(size=1)  # its last entry ends the set (not through job_finish)
    job_ended_send(run, JobStatus.FAILED)
    kinds = set(WebhookDelivery.objects.values_list("job_kind", "event"))
    assert kinds == {("benchmark.benchmarkset", "job.finished"), ("benchmark.run", "job.failed")}


def test_no_active_hook_means_no_rows_and_an_ended_job_is_announced_once(hook):
    hook.active = False
    hook.save()
    run = a_running_run()
    assert job_finish(run)
    assert not job_finish(run)  # already ended: no second announcement
    assert not WebhookDelivery.objects.exists()


def test_a_fault_in_recording_never_breaks_the_jobs_end(hook, monkeypatch):
    def broken(job, status):
        raise RuntimeError("the webhook tables are gone")

    monkeypatch.setattr("webhooks.tasks.job_event_record", broken)
    run = a_running_run()
    assert job_finish(run)
    run.refresh_from_db()
    assert run.status == JobStatus.FINISHED


def test_a_receiver_down_for_a_while_gets_the_event_once_it_is_back(fast_retries, hook, receiver):
    run = a_running_run()
    job_finish(run)
    delivery = WebhookDelivery.objects.get()
    receiver.stop()  # down: the connection is refused
    start = timezone.now()

    assert delivery_attempt(delivery.pk, now=start) == 10.0
    delivery.refresh_from_db()
    assert delivery.next_attempt_at == start + timedelta(seconds=10)
    assert "No answer" in delivery.error and delivery.response_status is None
    # Not before its time: neither a task nor a worker's look attempts it early (a task just
    # early is told when to come back; one far off leaves it to the retry already queued).
    assert delivery_attempt(delivery.pk, now=start + timedelta(seconds=9)) == 1.0
    assert delivery_attempt(delivery.pk, now=start + timedelta(seconds=5)) is None
    assert deliveries_due(now=start + timedelta(seconds=9)) == []

    back = Receiver(secret=receiver.secret, port=receiver.port, statuses=[503]).start()
    try:
        second = start + timedelta(seconds=10)
        assert deliveries_due(now=second) == [delivery.pk]
        assert delivery_attempt(delivery.pk, now=second) == 20.0  # the pause doubled
        delivery.refresh_from_db()
        assert (delivery.response_status, delivery.error) == (503, "HTTP 503")
        assert delivery.next_attempt_at == second + timedelta(seconds=20)
        assert delivery_attempt(delivery.pk, now=second + timedelta(seconds=20)) is None
    finally:
        back.stop()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.error) == ("delivered", 3, "")
    assert [request.signature_ok for request in back.requests] == [True, True]
    # The same bytes every time (signed anew with each attempt's own time).
    assert back.requests[0].body == back.requests[1].body


def test_a_task_that_arrives_just_early_is_told_to_come_back(fast_retries, hook, receiver):
    receiver.statuses = [500]
    job_finish(a_running_run())
    delivery = WebhookDelivery.objects.get()
    start = timezone.now()
    delivery_attempt(delivery.pk, now=start)
    assert delivery_attempt(delivery.pk, now=start + timedelta(seconds=9.5)) == pytest.approx(0.5)


def test_every_attempt_failing_fails_the_delivery_and_turns_the_hook_off(
    fast_retries, hook, receiver
):
    receiver.statuses = [500] * 6
    for _ in range(2):
        job_finish(a_running_run())
    now = timezone.now()
    for delivery in WebhookDelivery.objects.order_by("pk"):
        for attempt in range(3):
            delivery_attempt(delivery.pk, now=now + timedelta(seconds=1000 * attempt))
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 3, 500)
        now += timedelta(hours=1)
    hook.refresh_from_db()
    assert not hook.active and hook.consecutive_failures == 2
    assert "2 deliveries in a row" in hook.disabled_reason
    # Off: a later event is not even written, and a pending one is settled without a request.
    job_finish(a_running_run())
    assert WebhookDelivery.objects.count() == 2
    assert len(receiver.requests) == 6


def test_a_delivery_that_succeeds_resets_the_count(fast_retries, hook, receiver):
    hook.consecutive_failures = 1
    hook.save()
    job_finish(a_running_run())
    delivery_attempt(WebhookDelivery.objects.get().pk)
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0 and hook.active


def test_a_pending_delivery_of_a_hook_turned_off_meanwhile_fails_without_a_request(hook, receiver):
    job_finish(a_running_run())
    hook.active = False
    hook.save()
    delivery_attempt(WebhookDelivery.objects.get().pk)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "turned off" in delivery.error
    assert receiver.requests == []


def test_a_test_event_is_one_attempt_and_counts_for_nothing(fast_retries, hook, receiver):
    receiver.statuses = [502]
    ping = ping_record(hook)
    assert delivery_attempt(ping.pk) is None
    ping.refresh_from_db()
    assert (ping.status, ping.attempts, ping.response_status) == ("failed", 1, 502)
    hook.refresh_from_db()
    assert hook.consecutive_failures == 0
    delivered = ping_record(hook)
    delivery_attempt(delivered.pk)
    (_, request) = receiver.requests
    assert request.signature_ok and request.body["event"] == "ping"
    assert request.body["hook"] == {"id": hook.pk}


def test_a_redirect_is_not_followed(hook, receiver):
    receiver.statuses = [302]
    ping = ping_record(hook)
    delivery_attempt(ping.pk)
    ping.refresh_from_db()
    assert (ping.status, ping.response_status) == (DeliveryStatus.FAILED, 302)
    assert len(receiver.requests) == 1


def test_a_claimed_delivery_is_sent_once(hook, receiver):
    ping = ping_record(hook)
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=ping.pk).update(claimed_until=now + timedelta(minutes=1))
    assert delivery_attempt(ping.pk, now=now) is None
    assert receiver.requests == []


@pytest.mark.parametrize(
    "url, words",
    [
        ("ftp://example.org/x", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("example.org/hook", "http:// or https://"),
        ("https:///nohost", "needs a host"),
        ("https://me:pw@example.org/", "no user name"),
        ("https://example.org:99999/hook", "port must be a number"),
    ],
)
def test_only_http_and_https_urls_with_a_host_are_taken(researcher, url, words):
    with pytest.raises(ValidationError, match=words):
        webhook_create(owner=researcher, url=url)


def test_a_good_url_is_kept_stripped():
    assert webhook_url_check("  https://example.org/hook ") == "https://example.org/hook"


def test_a_study_archive_jobs_end_is_an_event_with_its_steps(hook, receiver, tmp_path):
    from alignment.models import ArchiveJob
    from alignment.services.archive.jobs import archive_job_run

    broken = tmp_path / "not-an-archive.zip"
    broken.write_bytes(b"not a zip")
    job = ArchiveJob.objects.create(kind="import", file_name="mine.zip", file_path=str(broken))
    archive_job_run(job.pk)  # not a zip: the job ends failed
    job.refresh_from_db()
    assert job.status == "failed"
    (delivery,) = WebhookDelivery.objects.all()
    assert (delivery.event, delivery.job_kind, delivery.job_id) == (
        "job.failed",
        "alignment.archivejob",
        job.pk,
    )
    delivery_attempt(delivery.pk)
    body = receiver.requests[0].body
    assert body["job"]["url"].endswith(f"/alignment/archives/{job.pk}/")
    assert "mine.zip" not in WebhookDelivery.objects.get().body  # no file or study names


def test_every_kind_of_job_is_described_with_a_page():
    from django.apps import apps
    from django.urls import reverse

    from jobs.models import Job
    from webhooks.services.payloads import KINDS

    jobs = {model._meta.label_lower for model in apps.get_models() if issubclass(model, Job)}
    assert jobs | {"benchmark.benchmarkset", "alignment.archivejob"} == set(KINDS)
    for kind, how in KINDS.items():
        apps.get_model(kind)
        assert reverse(how.page, args=[1])


def test_a_deleted_job_is_still_described_by_kind_id_and_status():
    from webhooks.services.payloads import job_description

    assert job_description("jury.scoringjob", 999, "failed") == {
        "kind": "jury.scoringjob", "id": 999, "status": "failed", "counts": {}, "cost_usd": None,
        "url": None,
    }  # fmt: skip


def test_a_workers_periodic_look_sends_what_a_lost_task_left_and_queues_the_retry(
    fast_retries, hook, receiver, monkeypatch
):
    from webhooks.tasks import deliveries_tick

    queued = []
    monkeypatch.setattr(
        "webhooks.tasks.delivery_send", lambda pk, countdown=0: queued.append((pk, countdown))
    )
    receiver.statuses = [503, 503]
    first, second = ping_record(hook), ping_record(hook)
    WebhookDelivery.objects.filter(pk=second.pk).update(
        event="job.finished", job_kind="benchmark.run", job_id=1
    )
    assert deliveries_tick() == 2
    assert WebhookDelivery.objects.get(pk=first.pk).status == "failed"  # a ping: one attempt
    assert queued == [(second.pk, 10.0)]  # the other's retry, after its pause
    assert WebhookDelivery.objects.get(pk=second.pk).status == "pending"


def test_scoring_and_rubric_lab_jobs_are_described_with_counts_and_cost(hook):
    from jury.models import ScoringJob
    from jury.services import juries
    from rubric_lab.models import GenerationJob
    from webhooks.services.payloads import job_description

    run = a_running_run()
    scoring = ScoringJob.objects.create(run=run, jury=juries.jury_demo_ensure())
    lab = GenerationJob.objects.create(name="Lab", run=run, generator_model="offline/standard")
    for job, page in ((scoring, f"/jury/jobs/{scoring.pk}/"), (lab, f"/lab/pipelines/{lab.pk}/")):
        described = job_description(job._meta.label_lower, job.pk, "finished")
        assert described["counts"] == {} and described["cost_usd"] == 0.0
        assert described["url"].endswith(page)
