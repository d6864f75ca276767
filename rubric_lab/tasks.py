"""Celery tasks: thin wrappers that load ids and call the rubric-lab services.

One task per case: `rubric_lab.generate` runs the whole pipeline for one conversation. Both
kinds of work are leased (benchmark.services.leases) and watched (benchmark.services.watch),
so a worker that dies loses nothing: the watch sends the work again with a new token.
"""

from functools import partial

from celery import shared_task

from benchmark.services import watch
from benchmark.services.leases import LeasedTask
from benchmark.tasks import watch_start
from rubric_lab.models import GenerationJob, InstanceScore, InstanceScoreStatus
from rubric_lab.services import instance_scoring, pipeline


@shared_task(name="rubric_lab.generate", acks_late=True)
def generation_task(generation_id: int, token: str | None = None) -> None:
    pipeline.generation_execute(generation_id, token)
    job_id = pipeline.job_id_of(generation_id)
    if job_id is not None:
        generation_redispatch(job_id)


def send_generations(tasks: list[LeasedTask]) -> None:
    for generation_id, token in tasks:
        generation_task.delay(generation_id, token)


def generation_start(job: GenerationJob) -> None:
    """Send the first window of the job's generations and watch the job."""
    pipeline.generation_dispatch(job, send_generations)
    watch_start("rubric_generation", job.pk)


generation_redispatch = watch.redispatcher(
    GenerationJob, partial(pipeline.generation_dispatch, send=send_generations)
)


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
