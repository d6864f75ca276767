"""Celery tasks of the lab's evaluation side: thin wrappers over the services.

Near-miss pairs, coverage cases and refinements are leased units (one task each), sent a
window at a time and re-sent by their job's watch when a worker dies; an ablation's watch
advances its chain (rubrics -> coverage and sensitivity) as each variant's rubrics finish.
"""

from functools import partial

from celery import shared_task

from benchmark.services import watch
from benchmark.services.leases import LeasedTask
from benchmark.tasks import watch_start
from rubric_lab.models import AblationStudy, CoverageRun, RefineStudy, SensitivityStudy
from rubric_lab.services import ablations, coverage, refine, sensitivity

# --- sensitivity studies ------------------------------------------------------------------


@shared_task(name="rubric_lab.near_miss", acks_late=True)
def near_miss_task(pair_id: int, token: str | None = None) -> None:
    sensitivity.near_miss_execute(pair_id, token)
    study_id = sensitivity.study_id_of(pair_id)
    if study_id is not None:
        sensitivity_redispatch(study_id)


def send_pairs(tasks: list[LeasedTask]) -> None:
    for pair_id, token in tasks:
        near_miss_task.delay(pair_id, token)


def sensitivity_start(study: SensitivityStudy) -> None:
    sensitivity.study_dispatch(study, send_pairs)
    watch_start("sensitivity", study.pk)


sensitivity_redispatch = watch.redispatcher(
    SensitivityStudy, partial(sensitivity.study_dispatch, send=send_pairs)
)

# --- coverage runs -------------------------------------------------------------------------


@shared_task(name="rubric_lab.coverage_case", acks_late=True)
def coverage_case_task(case_id: int, token: str | None = None) -> None:
    coverage.coverage_case_execute(case_id, token)
    run_id = coverage.coverage_run_id_of(case_id)
    if run_id is not None:
        coverage_redispatch(run_id)


def send_cases(tasks: list[LeasedTask]) -> None:
    for case_id, token in tasks:
        coverage_case_task.delay(case_id, token)


def coverage_start(run: CoverageRun) -> None:
    coverage.coverage_dispatch(run, send_cases)
    watch_start("coverage", run.pk)


coverage_redispatch = watch.redispatcher(
    CoverageRun, partial(coverage.coverage_dispatch, send=send_cases)
)

# --- critique-then-refine ------------------------------------------------------------------


@shared_task(name="rubric_lab.refinement", acks_late=True)
def refinement_task(pk: int, token: str | None = None) -> None:
    refine.refinement_execute(pk, token)
    study_id = refine.refine_study_id_of(pk)
    if study_id is not None:
        refine_redispatch(study_id)


def send_refinements(tasks: list[LeasedTask]) -> None:
    for pk, token in tasks:
        refinement_task.delay(pk, token)


def refine_start(study: RefineStudy) -> None:
    refine.refine_dispatch(study, send_refinements)
    watch_start("refine", study.pk)


refine_redispatch = watch.redispatcher(
    RefineStudy, partial(refine.refine_dispatch, send=send_refinements)
)

# --- ablations ------------------------------------------------------------------------------


def ablation_start(study: AblationStudy) -> None:
    from rubric_lab.tasks import generation_start

    for arm in study.arms.select_related("generation_job"):
        generation_start(arm.generation_job)
    watch_start("ablation", study.pk)


def ablation_redispatch(study_id: int) -> bool:
    study = AblationStudy.objects.filter(pk=study_id).first()
    if study is None:
        return False
    return ablations.ablation_advance(
        study, start_sensitivity=sensitivity_start, start_coverage=coverage_start
    )


WATCHED = {
    "sensitivity": (sensitivity.running_study_ids, sensitivity_redispatch),
    "coverage": (coverage.running_coverage_ids, coverage_redispatch),
    "refine": (refine.running_refine_ids, refine_redispatch),
    "ablation": (ablations.running_ablation_ids, ablation_redispatch),
}
