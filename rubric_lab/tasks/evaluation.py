"""Celery tasks of the lab's evaluation side: thin wrappers over the services.

Near-miss pairs, coverage cases and refinements are leased units (one task each), sent a
window at a time and re-sent by their job's watch when a worker dies; an ablation's watch
advances its chain (rubrics -> coverage and sensitivity) as each variant's rubrics finish.
"""

from benchmark.tasks import watch_start
from rubric_lab.models import (
    AblationStudy,
    CoverageRun,
    GenerationJob,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import ablations, coverage, refine, sensitivity
from rubric_lab.tasks.generation import generation_start
from rubric_lab.tasks.leased import leased_job_tasks

near_misses = leased_job_tasks(
    task_name="rubric_lab.near_miss",
    watch_kind="sensitivity",
    job_model=SensitivityStudy,
    execute=sensitivity.near_miss_execute,
    job_id_of=sensitivity.study_id_of,
    dispatch=sensitivity.study_dispatch,
)
sensitivity_start = near_misses.start

coverage_cases = leased_job_tasks(
    task_name="rubric_lab.coverage_case",
    watch_kind="coverage",
    job_model=CoverageRun,
    execute=coverage.coverage_case_execute,
    job_id_of=coverage.coverage_run_id_of,
    dispatch=coverage.coverage_dispatch,
)
coverage_start = coverage_cases.start

refinements = leased_job_tasks(
    task_name="rubric_lab.refinement",
    watch_kind="refine",
    job_model=RefineStudy,
    execute=refine.refinement_execute,
    job_id_of=refine.refine_study_id_of,
    dispatch=refine.refine_dispatch,
)
refine_start = refinements.start


def ablation_start(study: AblationStudy) -> None:
    for arm in study.arms.select_related("generation_job"):
        generation_start(arm.generation_job)
    watch_start("ablation", study.pk)


def job_start(job) -> None:
    """Send the work of a (resumed) lab job and start its watch; an ablation's watch goes on
    advancing its chain."""
    starts = {
        GenerationJob: generation_start,
        SensitivityStudy: sensitivity_start,
        CoverageRun: coverage_start,
        RefineStudy: refine_start,
        AblationStudy: lambda study: watch_start("ablation", study.pk),
    }
    starts[type(job)](job)


def ablation_redispatch(study_id: int) -> bool:
    study = AblationStudy.objects.filter(pk=study_id).first()
    if study is None:
        return False
    return ablations.ablation_advance(
        study, start_sensitivity=sensitivity_start, start_coverage=coverage_start
    )


WATCHED = {
    "sensitivity": (sensitivity.running_study_ids, near_misses.redispatch),
    "coverage": (coverage.running_coverage_ids, coverage_cases.redispatch),
    "refine": (refine.running_refine_ids, refinements.redispatch),
    "ablation": (ablations.running_ablation_ids, ablation_redispatch),
}
