"""Celery tasks of the rubric lab: thin wrappers that load ids and call the services.

By area: `leased` (the tasks of a job of leased units, shared by every kind), `generation`
(instance-rubric generation and instance scores), `evaluation` (near misses, coverage,
refinement, ablations). Importing the package registers every task with Celery.
"""

from rubric_lab.tasks.evaluation import (
    WATCHED,
    ablation_redispatch,
    ablation_start,
    coverage_start,
    job_start,
    refine_start,
    sensitivity_start,
)
from rubric_lab.tasks.generation import (
    generation_redispatch,
    generation_start,
    instance_score_redispatch,
    instance_score_start,
    instance_score_task,
)

__all__ = [
    "WATCHED",
    "ablation_redispatch",
    "ablation_start",
    "coverage_start",
    "generation_redispatch",
    "generation_start",
    "instance_score_redispatch",
    "instance_score_start",
    "instance_score_task",
    "job_start",
    "refine_start",
    "sensitivity_start",
]
