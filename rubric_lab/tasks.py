"""Celery tasks: thin wrappers that load ids and call the rubric-lab services.

One task per case: `rubric_lab.generate` runs the whole pipeline for one conversation. Every
kind of work is leased (benchmark.services.leases) and watched (benchmark.services.watch), so
a worker that dies loses nothing: the watch sends the work again with a new token.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from celery import shared_task

from benchmark.services import watch
from benchmark.services.leases import LeasedTask
from benchmark.tasks import watch_start
from rubric_lab.models import GenerationJob, InstanceScore, InstanceScoreStatus
from rubric_lab.services import instance_scoring, pipeline


@dataclass(frozen=True)
class LeasedJobTasks:
    """A job of leased units: the Celery task of one unit, how to start the job (first window
    sent, watch started) and the watch's redispatch."""

    unit_task: Callable
    start: Callable
    redispatch: Callable[[int], bool]


def leased_job_tasks(
    *,
    task_name: str,
    watch_kind: str,
    job_model,
    execute: Callable[[int, str | None], bool],
    job_id_of: Callable[[int], int | None],
    dispatch: Callable,
) -> LeasedJobTasks:
    """The tasks of one kind of job. A unit's task executes it, then tops up the job's window,
    so the queue keeps moving without waiting for the watch."""

    @shared_task(name=task_name, acks_late=True)
    def unit_task(pk: int, token: str | None = None) -> None:
        execute(pk, token)
        job_id = job_id_of(pk)
        if job_id is not None:
            redispatch(job_id)

    def send(tasks: list[LeasedTask]) -> None:
        for pk, token in tasks:
            unit_task.delay(pk, token)

    def start(job) -> None:
        dispatch(job, send)
        watch_start(watch_kind, job.pk)

    redispatch = watch.redispatcher(job_model, partial(dispatch, send=send))
    return LeasedJobTasks(unit_task, start, redispatch)


generations = leased_job_tasks(
    task_name="rubric_lab.generate", watch_kind="rubric_generation", job_model=GenerationJob,
    execute=pipeline.generation_execute, job_id_of=pipeline.job_id_of,
    dispatch=pipeline.generation_dispatch,
)  # fmt: skip
generation_start = generations.start
generation_redispatch = generations.redispatch


@shared_task(name="rubric_lab.instance_score", acks_late=True)
def instance_score_task(score_id: int, token: str | None = None) -> None:
    instance_scoring.instance_score_execute(score_id, token)


def send_scores(tasks: list[LeasedTask]) -> None:
    for score_id, token in tasks:
        instance_score_task.delay(score_id, token)


def instance_score_start(score: InstanceScore) -> None:
    instance_scoring.instance_score_dispatch(score, send_scores)
    watch_start("instance_score", score.pk)


def instance_score_redispatch(score_id: int) -> bool:
    """The watch of one score: send it again if its lease ran out; False once it is done."""
    score = InstanceScore.objects.filter(pk=score_id).first()
    if score is None:
        return False
    instance_scoring.instance_score_dispatch(score, send_scores)
    return InstanceScore.objects.filter(pk=score_id, status=InstanceScoreStatus.PENDING).exists()


from rubric_lab import tasks_evaluation  # noqa: E402, F401  (evaluation tasks: registered with Celery)
