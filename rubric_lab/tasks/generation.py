"""Celery tasks of instance rubrics: generation jobs and instance scores, declared the way
every app declares its jobs (jobs.tasks).

One task per case: `rubric_lab.generate` runs the whole pipeline for one conversation. Every
kind of work is leased (jobs.services.leases) and watched (jobs.services.watch), so a worker
that dies loses nothing: the watch sends the work again with a new token.
"""

from celery import shared_task

from jobs.services import watch
from jobs.services.leases import LeasedTask
from jobs.services.starts import start_register
from jobs.tasks import job_kind, leased_job_tasks
from rubric_lab.models import GenerationJob, InstanceScore, InstanceScoreStatus
from rubric_lab.services import generation_batches, instance_scoring, pipeline

generations = leased_job_tasks(
    task_name="rubric_lab.generate",
    kind="rubric_generation",
    job_model=GenerationJob,
    running=pipeline.running_job_ids,
    execute=pipeline.generation_execute,
    job_id_of=pipeline.job_id_of,
    dispatch=generation_batches.generation_job_dispatch,
)


def generation_job_start(job: GenerationJob) -> None:
    """A job in batch mode leaves its first look (replaying, uploading its batches) to a
    worker's watch, not to the view or command that launched it; a live job sends its first
    window."""
    if job.batch:
        watch.watch_now("rubric_generation", job.pk)
    else:
        generations.start(job)


start_register(GenerationJob, generation_job_start)

# --- instance scores: one leased unit that is its own job, watched until judged --------------


@shared_task(name="rubric_lab.instance_score", acks_late=True)
def instance_score_task(score_id: int, token: str | None = None) -> None:
    instance_scoring.instance_score_execute(score_id, token)


def send_scores(tasks: list[LeasedTask]) -> None:
    for score_id, token in tasks:
        instance_score_task.delay(score_id, token)


def instance_score_start(score: InstanceScore) -> None:
    instance_scoring.instance_score_dispatch(score, send_scores)
    watch.watch_start("instance_score", score.pk)


def instance_score_redispatch(score_id: int) -> bool:
    """The watch of one score: send it again if its lease ran out; False once it is done."""
    score = InstanceScore.objects.filter(pk=score_id).first()
    if score is None:
        return False
    instance_scoring.instance_score_dispatch(score, send_scores)
    return InstanceScore.objects.filter(pk=score_id, status=InstanceScoreStatus.PENDING).exists()


job_kind(
    "instance_score",
    model=InstanceScore,
    running=instance_scoring.pending_score_ids,
    redispatch=instance_score_redispatch,
    start=instance_score_start,
)
