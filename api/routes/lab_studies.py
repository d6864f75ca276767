"""The rubric lab's evaluation studies as JSON: near-miss sensitivity studies, coverage of
expert criteria, critique-then-refine and ablations, their result tables (typed rows and the
pages' files), their units of work, and resuming any lab job paused at its cost limit. The
helpers they share with the generation side are in api.routes.lab."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status
from ninja.errors import HttpError
from ninja.pagination import paginate

from api.filters import LabJobFilters, known_query
from api.lab_schemas import (
    AblationDetailOut,
    AblationIn,
    AblationOut,
    CoverageDetailOut,
    CoverageIn,
    CoverageOut,
    LabJobOut,
    RefineDetailOut,
    RefineIn,
    RefineOut,
    ResultTableOut,
    ResumeIn,
    SensitivityDetailOut,
    SensitivityIn,
    SensitivityOut,
)
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.routes.lab import (
    costs_out,
    counts_out,
    dry_run_answer,
    filtered,
    job_fields,
    lab_form,
    launched,
    progress_out,
    result_table,
    table_file,
    units_file,
)
from api.schemas import ForecastOut
from jobs.models import JobStatus
from jobs.services.cost_limits import CostLimitError
from jobs.services.starts import job_start
from jury.services import juries
from rubric_lab.forms import evaluation as evaluation_forms
from rubric_lab.models import (
    AblationStudy,
    AblationVariant,
    CoverageCase,
    CoverageRun,
    GenerationJob,
    NearMiss,
    Refinement,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import (
    ablations,
    budgets,
    coverage,
    refine,
    sensitivity,
    study_batches,
)
from rubric_lab.services import evaluation_work as work

router = Router(tags=["rubric lab"])


def batch_out(kind: study_batches.StudyBatchKind, job) -> dict:
    """A study's batch mode and, in it, its provider batches (BatchModeOut)."""
    return {
        "batch": job.batch,
        "batch_resend_live": job.batch_resend_live,
        "batches": study_batches.batch_progress(kind, job) if job.batch else [],
    }


# --- near-miss sensitivity ------------------------------------------------------------------------


def sensitivity_out(study: SensitivityStudy, progress: dict) -> dict:
    return job_fields(study) | {
        "run": study.run_id,
        "setup": study.setup,
        "jury": study.jury_id,
        "generation_job": study.generation_job_id,
        "judge_model": study.judge_model,
        "perturber_model": study.perturber_model,
        "perturbations": study.perturbations,
        "reference_model": study.reference_model,
        "max_cases": study.max_cases,
        "seed": study.seed,
        "progress": progress,
    }


def sensitivity_list_out(page: list[SensitivityStudy]) -> list[dict]:
    counts = work.jobs_counts(NearMiss.objects.all(), "study_id", [s.pk for s in page])
    return [sensitivity_out(study, counts_out(counts[study.pk])) for study in page]


def sensitivity_detail_out(study: SensitivityStudy) -> dict:
    progress = progress_out(sensitivity.study_progress(study))
    return (
        sensitivity_out(study, progress) | costs_out(study) | batch_out(sensitivity.BATCHES, study)
    )


def _sensitivity(study_id: int) -> SensitivityStudy:
    return get_object_or_404(SensitivityStudy, pk=study_id)


@router.post(
    "/lab/sensitivity-studies",
    response=responses({201: SensitivityDetailOut, 200: ForecastOut}, 400),
    url_name="lab_sensitivity_launch",
)
def lab_sensitivity_launch(request: HttpRequest, payload: SensitivityIn):
    """Near-miss pairs of a run's references, each scored by the judge setup: does the judge
    prefer the reference to its slightly worse copy? (The sensitivity page's form.)"""

    def launch() -> SensitivityStudy:
        # In a dry run, the default jury made here is undone with the rest.
        fields = payload.dict(exclude={"dry_run"})
        fields["jury"] = fields["jury"] or juries.jury_demo_ensure().pk
        form = lab_form(evaluation_forms.SensitivityLaunchForm, fields)
        return sensitivity.study_launch(user=request.user, **form.cleaned_data)

    if payload.dry_run:
        return dry_run_answer(launch, sensitivity.StudyError)
    study = launched(launch, sensitivity.StudyError)
    job_start(study)
    return Status(201, sensitivity_detail_out(study))


@router.get(
    "/lab/sensitivity-studies",
    response=responses({200: list[SensitivityOut]}, 400),
    url_name="lab_sensitivity_studies",
)
@paginate(RowsCursorPagination, out=sensitivity_list_out)
@known_query(LabJobFilters)
def lab_sensitivity_list(request: HttpRequest, filters: Query[LabJobFilters]):
    """Sensitivity studies, oldest first, with their pairs' counts; `status` narrows."""
    return filtered(SensitivityStudy.objects.all(), filters)


@router.get(
    "/lab/sensitivity-studies/{study_id}",
    response=responses({200: SensitivityDetailOut}, 404),
    url_name="lab_sensitivity_study",
)
def lab_sensitivity_study(request: HttpRequest, study_id: int):
    """The study's progress (pairs by status), tokens, spend and cost per model."""
    return sensitivity_detail_out(_sensitivity(study_id))


@router.post(
    "/lab/sensitivity-studies/{study_id}/retry",
    response=responses({200: SensitivityDetailOut}, 404),
    url_name="lab_sensitivity_retry",
)
def lab_sensitivity_retry(request: HttpRequest, study_id: int):
    """Send the failed pairs again (scored and not-applicable pairs are kept)."""
    study = _sensitivity(study_id)
    sensitivity.study_relaunch(study)
    job_start(study)
    study.refresh_from_db()
    return sensitivity_detail_out(study)


@router.get(
    "/lab/sensitivity-studies/{study_id}/results",
    response=responses({200: ResultTableOut}, 404),
    url_name="lab_sensitivity_results",
)
def lab_sensitivity_results(request: HttpRequest, study_id: int):
    """Per perturbation type, then every type pooled: the pairs' counts by status, win
    rate, tie rate, mean score difference and AUROC with their 95% bootstrap intervals (and
    position bias for pairwise judges)."""
    study = _sensitivity(study_id)
    return result_table(sensitivity.results_table(study, sensitivity.study_results(study)))


@router.get(
    "/lab/sensitivity-studies/{study_id}/results.{suffix}",
    response=responses({200: None}, 404),
    url_name="lab_sensitivity_export",
)
def lab_sensitivity_export(request: HttpRequest, study_id: int, suffix: str):
    """The results table as the study page exports it (csv, md or tex)."""
    study = _sensitivity(study_id)
    text_of = lambda: sensitivity.study_export(study, suffix)  # noqa: E731
    return table_file(request, study, suffix, text_of, f"sensitivity-{study_id}")


@router.get(
    "/lab/sensitivity-studies/{study_id}/pairs.{fmt}",
    response=responses({200: None}, 404),
    url_name="lab_sensitivity_pairs_export",
)
def lab_sensitivity_pairs_export(request: HttpRequest, study_id: int, fmt: str):
    """Every near-miss pair: what was changed, its status and both scores (jsonl or csv)."""
    study = _sensitivity(study_id)
    return units_file(
        request, study, fmt, sensitivity.pair_records, f"sensitivity-{study_id}-pairs"
    )


# --- coverage of expert criteria ------------------------------------------------------------------


def coverage_out(run: CoverageRun, progress: dict) -> dict:
    return job_fields(run) | {
        "generation_job": run.generation_job_id,
        "judge_model": run.judge_model,
        "progress": progress,
    }


def coverage_list_out(page: list[CoverageRun]) -> list[dict]:
    counts = work.jobs_counts(CoverageCase.objects.all(), "coverage_run_id", [r.pk for r in page])
    return [coverage_out(run, counts_out(counts[run.pk])) for run in page]


def coverage_detail_out(run: CoverageRun) -> dict:
    progress = progress_out(work.progress(run.cases.all()))
    return coverage_out(run, progress) | costs_out(run) | batch_out(coverage.BATCHES, run)


def _coverage(run_id: int) -> CoverageRun:
    return get_object_or_404(CoverageRun, pk=run_id)


@router.post(
    "/lab/coverage-runs",
    response=responses({201: CoverageDetailOut, 200: ForecastOut}, 400),
    url_name="lab_coverage_launch",
)
def lab_coverage_launch(request: HttpRequest, payload: CoverageIn):
    """How much of the expert criteria each rubric of a generation job covers (recall,
    precision, F1; the coverage page's form). The job's conversations need expert criteria."""
    form = lab_form(evaluation_forms.CoverageLaunchForm, payload.dict(exclude={"dry_run"}))
    launch = lambda: coverage.coverage_launch(user=request.user, **form.cleaned_data)  # noqa: E731
    if payload.dry_run:
        return dry_run_answer(launch, coverage.CoverageError)
    run = launched(launch, coverage.CoverageError)
    job_start(run)
    return Status(201, coverage_detail_out(run))


@router.get(
    "/lab/coverage-runs",
    response=responses({200: list[CoverageOut]}, 400),
    url_name="lab_coverage_runs",
)
@paginate(RowsCursorPagination, out=coverage_list_out)
@known_query(LabJobFilters)
def lab_coverage_list(request: HttpRequest, filters: Query[LabJobFilters]):
    """Coverage runs, oldest first, with their cases' counts; `status` narrows."""
    return filtered(CoverageRun.objects.all(), filters)


@router.get(
    "/lab/coverage-runs/{run_id}",
    response=responses({200: CoverageDetailOut}, 404),
    url_name="lab_coverage_run",
)
def lab_coverage_run(request: HttpRequest, run_id: int):
    return coverage_detail_out(_coverage(run_id))


@router.get(
    "/lab/coverage-runs/{run_id}/results",
    response=responses({200: ResultTableOut}, 404),
    url_name="lab_coverage_results",
)
def lab_coverage_results(request: HttpRequest, run_id: int):
    """One row per judged case, then the pooled (micro) figures with their conversation
    bootstrap intervals, the mean of cases (macro) and one row per axis."""
    return result_table(coverage.coverage_table(_coverage(run_id)))


@router.get(
    "/lab/coverage-runs/{run_id}/results.{suffix}",
    response=responses({200: None}, 404),
    url_name="lab_coverage_export",
)
def lab_coverage_export(request: HttpRequest, run_id: int, suffix: str):
    run = _coverage(run_id)
    text_of = lambda: coverage.coverage_export(run, suffix)  # noqa: E731
    return table_file(request, run, suffix, text_of, f"coverage-{run_id}")


@router.get(
    "/lab/coverage-runs/{run_id}/cases.{fmt}",
    response=responses({200: None}, 404),
    url_name="lab_coverage_cases_export",
)
def lab_coverage_cases_export(request: HttpRequest, run_id: int, fmt: str):
    """Every case: the expert criteria, their constraints and each judgement (jsonl, csv)."""
    run = _coverage(run_id)
    return units_file(request, run, fmt, coverage.case_records, f"coverage-{run_id}-cases")


@router.get(
    "/lab/coverage-runs/{run_id}/compare/{other_id}.{suffix}",
    response=responses({200: None}, 404),
    url_name="lab_coverage_compare_export",
)
def lab_coverage_compare_export(request: HttpRequest, run_id: int, other_id: int, suffix: str):
    """The comparison as a file (csv, md or tex). Declared before the typed comparison,
    whose `{other_id}` would take the dot."""
    run, other = _coverage(run_id), _coverage(other_id)
    text_of = lambda: coverage.comparison_export(run, other, suffix)  # noqa: E731
    return table_file(request, run, suffix, text_of, f"coverage-{run_id}-versus-{other_id}")


@router.get(
    "/lab/coverage-runs/{run_id}/compare/{other_id}",
    response=responses({200: ResultTableOut}, 404),
    url_name="lab_coverage_compare",
)
def lab_coverage_compare(request: HttpRequest, run_id: int, other_id: int):
    """Recall of this run (A) against another (B) on the constraints both judged, overall
    and per axis: McNemar's test adjusted for conversations, and the difference with its
    conversation bootstrap interval."""
    return result_table(coverage.comparison_table(_coverage(run_id), _coverage(other_id)))


# --- critique-then-refine -------------------------------------------------------------------------


def refine_out(study: RefineStudy, progress: dict) -> dict:
    return job_fields(study) | {
        "generation_job": study.generation_job_id,
        "evaluator_model": study.evaluator_model,
        "editor_model": study.editor_model,
        "judge_model": study.judge_model,
        "criteria_judge_model": study.criteria_judge_model,
        "max_cases": study.max_cases,
        "progress": progress,
    }


def refine_list_out(page: list[RefineStudy]) -> list[dict]:
    counts = work.jobs_counts(Refinement.objects.all(), "study_id", [s.pk for s in page])
    return [refine_out(study, counts_out(counts[study.pk])) for study in page]


def refine_detail_out(study: RefineStudy) -> dict:
    progress = progress_out(work.progress(study.refinements.all()))
    return refine_out(study, progress) | costs_out(study) | batch_out(refine.BATCHES, study)


def _refine(study_id: int) -> RefineStudy:
    return get_object_or_404(RefineStudy, pk=study_id)


@router.post(
    "/lab/refine-studies",
    response=responses({201: RefineDetailOut, 200: ForecastOut}, 400),
    url_name="lab_refine_launch",
)
def lab_refine_launch(request: HttpRequest, payload: RefineIn):
    """Critique-then-refine of a generation job's conversations: the rubric arm against
    self-critique (and the expert-criteria oracle), scored by an independent judge (the
    refine page's form)."""
    form = lab_form(evaluation_forms.RefineLaunchForm, payload.dict(exclude={"dry_run"}))
    launch = lambda: refine.refine_launch(user=request.user, **form.cleaned_data)  # noqa: E731
    if payload.dry_run:
        return dry_run_answer(launch, refine.RefineError)
    study = launched(launch, refine.RefineError)
    job_start(study)
    return Status(201, refine_detail_out(study))


@router.get(
    "/lab/refine-studies",
    response=responses({200: list[RefineOut]}, 400),
    url_name="lab_refine_studies",
)
@paginate(RowsCursorPagination, out=refine_list_out)
@known_query(LabJobFilters)
def lab_refine_list(request: HttpRequest, filters: Query[LabJobFilters]):
    """Refine studies, oldest first, with their refinements' counts; `status` narrows."""
    return filtered(RefineStudy.objects.all(), filters)


@router.get(
    "/lab/refine-studies/{study_id}",
    response=responses({200: RefineDetailOut}, 404),
    url_name="lab_refine_study",
)
def lab_refine_study(request: HttpRequest, study_id: int):
    return refine_detail_out(_refine(study_id))


@router.get(
    "/lab/refine-studies/{study_id}/results",
    response=responses({200: ResultTableOut}, 404),
    url_name="lab_refine_results",
)
def lab_refine_results(request: HttpRequest, study_id: int):
    """Each arm's mean gain (refined - original) with its bootstrap interval, by the
    independent judge and against the expert criteria, then the paired differences."""
    return result_table(refine.refine_table(_refine(study_id)))


@router.get(
    "/lab/refine-studies/{study_id}/results.{suffix}",
    response=responses({200: None}, 404),
    url_name="lab_refine_export",
)
def lab_refine_export(request: HttpRequest, study_id: int, suffix: str):
    study = _refine(study_id)
    text_of = lambda: refine.refine_export(study, suffix)  # noqa: E731
    return table_file(request, study, suffix, text_of, f"refine-{study_id}")


@router.get(
    "/lab/refine-studies/{study_id}/refinements.{fmt}",
    response=responses({200: None}, 404),
    url_name="lab_refinements_export",
)
def lab_refinements_export(request: HttpRequest, study_id: int, fmt: str):
    """Every refinement: its arm, plan, edits, violations and scores (jsonl or csv)."""
    study = _refine(study_id)
    return units_file(request, study, fmt, refine.refinement_records, f"refine-{study_id}-units")


# --- ablations ------------------------------------------------------------------------------------


def ablation_out(study: AblationStudy) -> dict:
    return job_fields(study) | {
        "run": study.run_id,
        "generator_model": study.generator_model,
        "judge_model": study.judge_model,
        "perturber_model": study.perturber_model,
        "reference_model": study.reference_model,
        "max_cases": study.max_cases,
        "batch": study.batch,
        "batch_resend_live": study.batch_resend_live,
    }


def ablations_out(page: list[AblationStudy]) -> list[dict]:
    return [ablation_out(study) for study in page]


def interval(estimate) -> dict | None:
    if estimate is None:
        return None
    return {"estimate": estimate.value, "low": estimate.low, "high": estimate.high}


def arm_out(row: dict) -> dict:
    arm, overall, compared = row["arm"], row["coverage"], row["versus_full"]
    found = row["sensitivity"]
    versus_full = None
    if compared is not None and compared.difference is not None:
        versus_full = {
            "difference": interval(compared.difference),
            "p_value": compared.test.p_value,
            "test": coverage.comparison_method(compared.test),
        }
    return {
        "variant": arm.variant,
        "label": AblationVariant(arm.variant).label,
        "generation_job": arm.generation_job_id,
        "generation_status": arm.generation_job.status,
        "coverage_run": arm.coverage_run_id,
        "sensitivity_study": arm.sensitivity_study_id,
        "rubrics": row["rubrics"],
        **{
            name: interval(getattr(overall.intervals, name)) if overall else None
            for name in ("recall", "precision", "f1")
        },
        "versus_full": versus_full,
        "auroc": interval(found.auroc) if found else None,
        "win_rate": interval(found.win_rate) if found else None,
    }


def ablation_detail_out(study: AblationStudy) -> dict:
    arms = [arm_out(row) for row in ablations.ablation_rows(study)]
    return ablation_out(study) | {"arms": arms} | costs_out(study)


@router.post(
    "/lab/ablation-studies",
    response=responses({201: AblationDetailOut, 200: ForecastOut}, 400),
    url_name="lab_ablation_launch",
)
def lab_ablation_launch(request: HttpRequest, payload: AblationIn):
    """The full pipeline, each stage left out and the direct baseline on the same
    conversations, each followed by coverage and sensitivity (the ablation page's form)."""
    form = lab_form(evaluation_forms.AblationLaunchForm, payload.dict(exclude={"dry_run"}))
    launch = lambda: ablations.ablation_launch(user=request.user, **form.cleaned_data)  # noqa: E731
    if payload.dry_run:
        return dry_run_answer(launch, ablations.AblationError)
    study = launched(launch, ablations.AblationError)
    ablations.ablation_start(study)
    return Status(201, ablation_detail_out(study))


@router.get(
    "/lab/ablation-studies",
    response=responses({200: list[AblationOut]}, 400),
    url_name="lab_ablation_studies",
)
@paginate(RowsCursorPagination, out=ablations_out)
@known_query(LabJobFilters)
def lab_ablation_list(request: HttpRequest, filters: Query[LabJobFilters]):
    """Ablation studies, oldest first; `status` narrows. Each one's variants are on its own
    route."""
    return filtered(AblationStudy.objects.all(), filters)


@router.get(
    "/lab/ablation-studies/{study_id}",
    response=responses({200: AblationDetailOut}, 404),
    url_name="lab_ablation_study",
)
def lab_ablation_study(request: HttpRequest, study_id: int):
    """Per variant: rubrics made, coverage with its intervals and its test against the full
    pipeline, sensitivity pooled over types; and the cost per model of every part."""
    return ablation_detail_out(get_object_or_404(AblationStudy, pk=study_id))


# --- resuming a job paused at its cost limit ------------------------------------------------------

RESUMABLE = {
    "generation": GenerationJob,
    "sensitivity": SensitivityStudy,
    "coverage": CoverageRun,
    "refine": RefineStudy,
    "ablation": AblationStudy,
}


@router.post(
    "/lab/jobs/{kind}/{job_id}/resume",
    response=responses({200: LabJobOut}, 400, 404),
    url_name="lab_job_resume",
)
def lab_job_resume(request: HttpRequest, kind: str, job_id: int, payload: ResumeIn):
    """Resume a lab job paused at its cost limit (`kind` generation, sensitivity, coverage,
    refine or ablation), with a higher limit if given; an ablation resumes with its parts."""
    if kind not in RESUMABLE:
        raise HttpError(404, f"Kinds of lab job: {', '.join(RESUMABLE)}.")
    job = get_object_or_404(RESUMABLE[kind], pk=job_id)
    if job.status != JobStatus.PAUSED:
        raise Refused(f"The {kind} job is {job.status}: only a paused job resumes.")
    try:
        started = budgets.job_resume(job, cost_limit_usd=payload.cost_limit_usd)
    except CostLimitError as error:
        raise Refused(
            str(error), [{"location": "body.cost_limit_usd", "message": str(error)}]
        ) from None
    for part in started:
        job_start(part)
    job.refresh_from_db()
    return job_fields(job)
