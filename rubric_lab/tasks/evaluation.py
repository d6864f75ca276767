"""Celery tasks of the lab's evaluation side, declared the way every app declares its jobs
(jobs.tasks).

Near-miss pairs, coverage cases and refinements are leased units (one task each), sent a
window at a time and re-sent by their job's watch when a worker dies; an ablation's watch
advances its chain (rubrics -> coverage and sensitivity) as each variant's rubrics finish.
A sensitivity study, coverage run or refine study in batch mode sends no unit: its watch is its
batch poll. A batch ablation launches every part of its chain in batch mode.
"""

from jobs.services import watch
from jobs.services.starts import job_start, start_register
from jobs.tasks import job_kind, leased_job_tasks
from rubric_lab.models import AblationStudy, CoverageRun, RefineStudy, SensitivityStudy
from rubric_lab.services import ablations, coverage, refine, sensitivity

near_misses = leased_job_tasks(
    task_name="rubric_lab.near_miss",
    kind="sensitivity",
    job_model=SensitivityStudy,
    running=sensitivity.running_study_ids,
    execute=sensitivity.near_miss_execute,
    job_id_of=sensitivity.study_id_of,
    dispatch=sensitivity.study_dispatch,
)

coverage_cases = leased_job_tasks(
    task_name="rubric_lab.coverage_case",
    kind="coverage",
    job_model=CoverageRun,
    running=coverage.running_coverage_ids,
    execute=coverage.coverage_case_execute,
    job_id_of=coverage.coverage_run_id_of,
    dispatch=coverage.coverage_dispatch,
)


def study_start(kind: str, live_start):
    """The start of a kind of study with batch mode: a study in batch mode leaves its first
    look (replaying, uploading its batches) to a worker's watch, not to the view or command
    that launched it; a live study sends its first window."""

    def start(study) -> None:
        if study.batch:
            watch.watch_now(kind, study.pk)
        else:
            live_start(study)

    return start


start_register(SensitivityStudy, study_start("sensitivity", near_misses.start))
start_register(CoverageRun, study_start("coverage", coverage_cases.start))

refinements = leased_job_tasks(
    task_name="rubric_lab.refinement",
    kind="refine",
    job_model=RefineStudy,
    running=refine.running_refine_ids,
    execute=refine.refinement_execute,
    job_id_of=refine.refine_study_id_of,
    dispatch=refine.refine_dispatch,
)
start_register(RefineStudy, study_start("refine", refinements.start))


def ablation_redispatch(study_id: int) -> bool:
    study = AblationStudy.objects.filter(pk=study_id).first()
    if study is None:
        return False
    return ablations.ablation_advance(study, start_sensitivity=job_start, start_coverage=job_start)


# An ablation has no units of its own: its start is its watch, which starts the studies of
# each variant as that variant's rubrics finish (ablations.ablation_start starts the rubrics).
job_kind(
    "ablation",
    model=AblationStudy,
    running=ablations.running_ablation_ids,
    redispatch=ablation_redispatch,
    start=lambda study: watch.watch_start("ablation", study.pk),
)
