"""Celery tasks of the jury: its one kind of job, scoring, declared the way every app declares
its jobs (jobs.tasks). A message carries a group of one conversation's judge calls
(scoring.judge_score_run); after it the job's window is topped up; the watch sends what was
lost.

Views, commands and the API start scoring with jury.services.scoring.scoring_start.
"""

from jobs.tasks import leased_job_tasks
from jury.models import ScoringJob
from jury.services import scoring, scoring_batches

judging = leased_job_tasks(
    task_name="jury.judge_score",
    kind="scoring",
    job_model=ScoringJob,
    running=scoring.running_job_ids,
    execute=scoring.judge_score_run,
    job_id_of=scoring.job_id_of,
    dispatch=scoring_batches.scoring_job_dispatch,
    reports_job=True,
)
judge_score_task = judging.unit_task
