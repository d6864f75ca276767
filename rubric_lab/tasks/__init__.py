"""Celery tasks of the rubric lab, and the declarations of its kinds of job (jobs.tasks).

By area: `generation` (instance-rubric generation and instance scores), `evaluation` (near
misses, coverage, refinement, ablations). Importing the package registers every task with
Celery and every kind with the watch and jobs.services.starts; views, commands and services
start a job with `job_start`, never a task.
"""

from rubric_lab.tasks import evaluation, generation

__all__ = ["evaluation", "generation"]
