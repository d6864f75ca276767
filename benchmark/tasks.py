"""Celery tasks: thin wrappers that load ids and call services."""

import logging
from functools import partial

from celery import shared_task
from django.db import transaction

from benchmark.models import BenchmarkSet, Conversation, Run
from benchmark.services import cases, runs
from benchmark.services.conversations import conversation_execute
from jobs.services import watch
from jobs.services.leases import CONNECTION_LOST, LeasedTask
from jobs.services.queue import queue_send

logger = logging.getLogger(__name__)

# --- the watch, for every kind of job ---------------------------------------------------------


@shared_task(name="jobs.watch")
def job_watch_task(kind: str, job_id: int) -> None:
    """Send the job's lost work again, then look again in half a lease while it runs."""
    try:
        still_running = watch.redispatch(kind, job_id)
    except CONNECTION_LOST:
        # The database went away (a restart): look again later rather than end the watch.
        logger.warning("watch of %s %s could not reach the database", kind, job_id)
        still_running = True
    # Run eagerly (tests, --inline) there is no later: the countdown would recurse at once.
    if still_running and not job_watch_task.request.is_eager:
        watch_later(kind, job_id)


def watch_later(kind: str, job_id: int) -> None:
    # Sent to the queue: a watch lost with an unavailable queue is taken up again by every
    # worker that (re)connects to it (config/celery.py).
    queue_send(
        lambda: job_watch_task.apply_async((kind, job_id), countdown=watch.interval_seconds()),
        what=f"the watch of {kind} {job_id}",
    )


def watch_start(kind: str, job_id: int) -> None:
    transaction.on_commit(lambda: watch_later(kind, job_id))


def resume_watches() -> None:
    """Take up every job still running, of every kind, at once (a worker connecting)."""
    for kind, watched in watch.kinds().items():
        for job_id in watched.running():
            queue_send(partial(job_watch_task.delay, kind, job_id), what=f"the watch of {kind}")


# --- runs ---------------------------------------------------------------------------------------


def enqueue_conversations(conversation_ids: list[int]) -> None:
    for position, conversation_id in enumerate(conversation_ids):
        unsent = conversation_ids[position:]
        sent = queue_send(
            partial(conversation_run_task.delay, conversation_id),
            what=f"{len(unsent)} conversations",
            undo=partial(runs.run_unclaim, unsent),
        )
        if not sent:
            return


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
    watch_start("run", run_id)


def run_start_after_commit(run: Run) -> None:
    """Dispatch a launched or resumed run once its rows are committed (the launch page and the
    API alike); a broker that is down leaves it held, as `queue_send` says."""
    transaction.on_commit(
        lambda: queue_send(partial(run_dispatch_task.delay, run.pk), what=f"run {run.name!r}")
    )


RUN_ACTIONS = ("pause", "cancel", "resume")


def run_control(
    run: Run, action: str, *, actor, retry_failed: bool = False, cost_limit_usd=None
) -> None:
    """One of RUN_ACTIONS, from the run page's buttons or the API alike: a resumed run is
    dispatched again once committed. Raises runs.RunError when the run's state refuses it."""
    if action == "pause":
        runs.run_pause(run, actor=actor)
    elif action == "cancel":
        runs.run_cancel(run, actor=actor)
    elif action == "resume":
        runs.run_resume(run, retry_failed=retry_failed, cost_limit_usd=cost_limit_usd, actor=actor)
        run_start_after_commit(run)
    else:
        raise ValueError(f"No run action {action!r}; use one of {', '.join(RUN_ACTIONS)}.")


run_redispatch = watch.redispatcher(Run, partial(runs.run_dispatch, enqueue=enqueue_conversations))


# --- enrichment ---------------------------------------------------------------------------------


@shared_task(name="benchmark.entry_enrich", acks_late=True)
def entry_enrich_task(entry_id: int, token: str | None = None) -> None:
    cases.entry_enrich(entry_id, token)
    set_id = cases.set_id_of(entry_id)
    if set_id is not None:
        enrichment_redispatch(set_id)


def send_entries(tasks: list[LeasedTask]) -> None:
    for entry_id, token in tasks:
        entry_enrich_task.delay(entry_id, token)


def enrichment_start(benchmark_set: BenchmarkSet) -> None:
    """Send the first window of the set's pending entries and watch the set; the rest follow
    as entries finish."""
    cases.enrichment_dispatch(benchmark_set, send_entries)
    watch_start("set", benchmark_set.pk)


enrichment_redispatch = watch.redispatcher(
    BenchmarkSet, partial(cases.enrichment_dispatch, send=send_entries)
)
