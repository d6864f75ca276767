"""Celery tasks: thin wrappers that load ids and call services."""

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import transaction

from benchmark.models import Conversation, JobStatus, Run
from benchmark.services import cases, runs
from benchmark.services.conversations import conversation_execute


def enqueue_conversations(conversation_ids: list[int]) -> None:
    for conversation_id in conversation_ids:
        conversation_run_task.delay(conversation_id)


@shared_task(name="benchmark.conversation_run", acks_late=True)
def conversation_run_task(conversation_id: int) -> None:
    conversation_execute(conversation_id)
    run_id = Conversation.objects.filter(pk=conversation_id).values_list("run_id", flat=True)
    for run in Run.objects.filter(pk__in=run_id):
        runs.run_dispatch(run, enqueue_conversations)


@shared_task(name="benchmark.run_dispatch")
def run_dispatch_task(run_id: int) -> None:
    """Start (or resume) a run, and keep a watch on it."""
    runs.run_dispatch(Run.objects.get(pk=run_id), enqueue_conversations)
    _watch_later(run_id)


@shared_task(name="benchmark.run_watch")
def run_watch_task(run_id: int) -> None:
    """Dispatch again once per lease period while the run is running.

    Conversations lost with a dead worker are picked up again here without anyone having to
    press Resume; dispatch itself decides what is stale.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        runs.run_dispatch(run, enqueue_conversations)
        _watch_later(run_id)


def _watch_later(run_id: int) -> None:
    if Run.objects.filter(pk=run_id, status=JobStatus.RUNNING).exists():
        run_watch_task.apply_async((run_id,), countdown=settings.CONVERSATION_LEASE_SECONDS + 5)


@worker_ready.connect
def resume_running_runs(**kwargs) -> None:
    """A (re)started worker takes up every run still marked running."""
    for run_id in Run.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True):
        run_watch_task.delay(run_id)


@shared_task(name="benchmark.entry_enrich", acks_late=True)
def entry_enrich_task(entry_id: int) -> None:
    cases.entry_enrich(entry_id)


def enqueue_entries(entry_ids: list[int]) -> None:
    """Send after the surrounding transaction commits, so a worker always finds the entries."""
    transaction.on_commit(lambda: _send_entries(entry_ids))


def _send_entries(entry_ids: list[int]) -> None:
    for entry_id in entry_ids:
        entry_enrich_task.delay(entry_id)
