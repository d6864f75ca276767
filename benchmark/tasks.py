"""Celery tasks of the benchmark: thin wrappers that load ids and call services, and the
declarations of its two kinds of job (jobs.tasks): runs and benchmark sets being enriched.

Views, commands and the API start a job with jobs.services.starts.job_start (or a service that
calls it), never with these tasks.
"""

from functools import partial

from celery import shared_task
from django.db import transaction

from benchmark.models import BenchmarkSet, Run
from benchmark.services import case_batches, cases, runs
from benchmark.services.conversations import conversation_execute
from jobs.services import watch
from jobs.services.queue import queue_send
from jobs.services.starts import start_register
from jobs.tasks import job_kind, leased_job_tasks

# --- runs ---------------------------------------------------------------------------------------
# A run's conversations are not leased by token: their status and heartbeat hold them
# (benchmark.services.runs), so a run declares its tasks itself.


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
    runs.run_dispatch_after(conversation_id, enqueue_conversations)


@shared_task(name="benchmark.run_dispatch")
def run_dispatch_task(run_id: int) -> None:
    """Start (or resume) a run, and keep a watch on it."""
    runs.run_dispatch(Run.objects.get(pk=run_id), enqueue_conversations)
    watch.watch_start("run", run_id)


def run_start_after_commit(run: Run) -> None:
    """Dispatch a launched or resumed run once its rows are committed; a broker that is down
    leaves it held, as `queue_send` says."""
    transaction.on_commit(
        lambda: queue_send(partial(run_dispatch_task.delay, run.pk), what=f"run {run.name!r}")
    )


job_kind(
    "run",
    model=Run,
    running=runs.running_run_ids,
    redispatch=watch.redispatcher(Run, partial(runs.run_dispatch, enqueue=enqueue_conversations)),
    start=run_start_after_commit,
)

# --- enrichment ---------------------------------------------------------------------------------

enrichment = leased_job_tasks(
    task_name="benchmark.entry_enrich",
    kind="set",
    job_model=BenchmarkSet,
    running=cases.running_set_ids,
    execute=cases.entry_enrich,
    job_id_of=cases.set_id_of,
    dispatch=case_batches.enrichment_job_dispatch,
)
entry_enrich_task = enrichment.unit_task


def benchmark_set_start(benchmark_set: BenchmarkSet) -> None:
    """A set in batch mode leaves its first look (building and uploading its batches) to a
    worker's watch, not to the view or command that launched it; a live set sends its first
    window."""
    if benchmark_set.batch:
        watch.watch_now("set", benchmark_set.pk)
    else:
        enrichment.start(benchmark_set)


start_register(BenchmarkSet, benchmark_set_start)
