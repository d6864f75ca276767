"""Celery tasks of instance rubrics: generation jobs and instance scores.

One task per case: `rubric_lab.generate` runs the whole pipeline for one conversation. Every
kind of work is leased (benchmark.services.leases) and watched (benchmark.services.watch), so
a worker that dies loses nothing: the watch sends the work again with a new token.
"""

from celery import shared_task

from benchmark.services.leases import LeasedTask
from benchmark.tasks import watch_start
from rubric_lab.models import GenerationJob, InstanceScore, InstanceScoreStatus
from rubric_lab.services import instance_scoring, pipeline
from rubric_lab.tasks.leased import leased_job_tasks

generations = leased_job_tasks(
    task_name="rubric_lab.generate",
    watch_kind="rubric_generation",
    job_model=GenerationJob,
    execute=pipeline.generation_execute,
    job_id_of=pipeline.job_id_of,
    dispatch=pipeline.generation_dispatch,
)
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
