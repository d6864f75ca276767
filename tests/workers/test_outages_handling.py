"""What each piece does when Redis or the database is unreachable, without real servers: the
claims undone when a send fails, the watch that outlives a database error, the response cache
that turns into misses, the staff banner and the launch messages."""

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.urls import reverse
from kombu.exceptions import OperationalError as BrokerError

from benchmark import tasks
from benchmark.models import ConversationStatus
from benchmark.services import runs
from jobs import tasks as job_tasks
from jobs.services import queue
from jury.models import ScoreStatus, ScoringJob
from jury.services import juries, scoring
from jury.services.scoring import scoring_start
from llm.clients import DjangoCacheStore
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db
UNAVAILABLE = "The task queue (Redis) is unavailable"


def refuse(*args, **kwargs):
    raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


@pytest.fixture
def queue_down(monkeypatch, settings):
    """Redis configured but not answering; every send refused like kombu refuses it."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    monkeypatch.setattr(queue, "_ping", lambda url: False)
    monkeypatch.setattr(queue, "_last_checks", {})
    for task in (tasks.conversation_run_task, job_tasks.job_watch_task, tasks.run_dispatch_task):
        monkeypatch.setattr(task, "delay", refuse)
        monkeypatch.setattr(task, "apply_async", refuse)
    from jury import tasks as jury_tasks

    monkeypatch.setattr(jury_tasks.judge_score_task, "delay", refuse)


@pytest.fixture
def run():
    return launched_run(enriched_set(name="outage units", size=2), concurrency=2)


def test_conversations_whose_messages_could_not_be_sent_go_back_to_pending(
    queue_down, run, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        claimed = runs.run_dispatch(run, tasks.enqueue_conversations)
    assert len(claimed) == 2
    assert set(run.conversations.values_list("status", flat=True)) == {ConversationStatus.PENDING}
    # ...so the next dispatch (the watch, once Redis is back) claims them again at once.
    assert len(runs.run_dispatch(run, lambda ids: None)) == 2


def test_judge_calls_whose_messages_could_not_be_sent_are_unclaimed(
    queue_down, django_capture_on_commit_callbacks
):
    finished = played(launched_run(enriched_set(name="outage scoring", size=1)))
    jury = juries.jury_create(name="one judge", judges=["offline/standard"])
    job = scoring.scoring_launch(run=finished, jury=jury, use_cache=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert scoring_start(job) == job.scores.count() > 0
    pending = job.scores.filter(status=ScoreStatus.PENDING)
    assert pending.count() == job.scores.count()
    assert not pending.filter(claimed_until__isnull=False).exists()
    assert not pending.exclude(lease_token="").exists()


def test_the_watch_looks_again_when_the_database_is_away(monkeypatch):
    def database_away(kind, job_id):
        raise OperationalError("connection to server failed")

    later = []
    monkeypatch.setattr(job_tasks.watch, "redispatch", database_away)
    monkeypatch.setattr(job_tasks, "watch_later", lambda kind, job_id: later.append((kind, job_id)))
    job_tasks.job_watch_task.run("run", 7)
    assert later == [("run", 7)]


def test_an_unreachable_response_cache_is_a_miss_not_a_failure(settings):
    settings.CACHES = {
        **settings.CACHES,
        "llm": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.2},
        },
    }
    store = DjangoCacheStore()
    store.set("key", "answer")  # skipped, not raised
    assert store.get("key") is None
    store.delete("key")


def test_a_failing_cache_backend_error_of_another_kind_still_raises(monkeypatch):
    store = DjangoCacheStore()

    class Broken:
        def get(self, key):
            raise ValueError("a bug, not an outage")

    monkeypatch.setattr(store, "_cache", lambda: Broken())
    with pytest.raises(ValueError):
        store.get("key")


def test_staff_pages_say_the_queue_is_unavailable(queue_down, researcher_client):
    assert UNAVAILABLE in researcher_client.get(reverse("home")).content.decode()


def test_annotators_are_not_told_about_the_queue(queue_down, client, annotator):
    client.force_login(annotator)
    assert UNAVAILABLE not in client.get(reverse("home")).content.decode()


def test_pages_say_nothing_while_the_queue_answers(researcher_client, settings, monkeypatch):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    monkeypatch.setattr(queue, "_ping", lambda url: True)
    monkeypatch.setattr(queue, "_last_checks", {})
    assert UNAVAILABLE not in researcher_client.get(reverse("home")).content.decode()


def test_resuming_a_run_while_the_queue_is_down_says_it_is_saved(
    queue_down, admin_client_, run, django_capture_on_commit_callbacks
):
    runs.run_pause(run)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_.post(
            reverse("benchmark:run_control", args=[run.pk, "resume"]), follow=True
        )
    assert response.status_code == 200
    assert "the run is saved and will start by itself" in response.content.decode()
    run.refresh_from_db()
    assert run.status == "running"


def test_the_run_command_says_the_run_is_saved_when_the_queue_is_down(queue_down):
    enriched_set(name="cli outage", size=1)
    with pytest.raises(CommandError, match="is saved and will start by itself"):
        call_command(
            "run_benchmark", "--name", "cli run", "--set", "cli outage",
            "--model", "offline/careful", "--no-wait",
        )  # fmt: skip


def test_a_conversation_whose_merge_was_lost_is_merged_before_the_job_finishes():
    finished = played(launched_run(enriched_set(name="lost merge", size=1)))
    jury = juries.jury_create(name="merging judge", judges=["offline/standard"])
    job = scoring.scoring_launch(run=finished, jury=jury, use_cache=False)
    for score_id in job.scores.values_list("id", flat=True):
        scoring.judge_score_execute(score_id)
    lost = job.conversation_results.first()
    aggregate = lost.aggregate
    # As if the last judge task stored its score and the database went before the merge.
    lost.delete()
    ScoringJob.objects.filter(pk=job.pk).update(status="running", finished_at=None)
    scoring.job_finish_if_done(job)
    job.refresh_from_db()
    assert job.status == "finished"
    assert job.conversation_results.get(conversation=lost.conversation).aggregate == aggregate
