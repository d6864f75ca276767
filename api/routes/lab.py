"""The rubric lab as JSON: physician-criteria imports, instance-rubric generation jobs,
near-miss sensitivity studies, coverage of expert criteria, critique-then-refine, ablations,
their result tables (typed rows, and the pages' CSV / Markdown / LaTeX files) and their units
of work (JSON Lines or CSV). Every launch goes through the lab page's form and service, and
starts its job as the page does; the answer carries the job's progress to poll."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from django import forms
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from ninja.pagination import paginate

from api.filters import GenerationJobFilters, LabJobFilters, known_query
from api.forms import form_checked, form_refused
from api.jobs import held
from api.lab_schemas import (
    AblationDetailOut,
    AblationIn,
    AblationOut,
    CoverageDetailOut,
    CoverageIn,
    CoverageOut,
    CriteriaImportOut,
    ExpertCriterionOut,
    GenerationJobDetailOut,
    GenerationJobIn,
    GenerationJobOut,
    GenerationOut,
    HealthBenchImportOut,
    InstanceRubricDetailOut,
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
from api.tables import table_rows
from audit.downloads import download_response
from jobs.models import JobStatus
from jobs.services.cost_limits import CostLimitError
from jobs.services.starts import job_start
from jury.services import juries
from rubric_lab.forms import evaluation as evaluation_forms
from rubric_lab.forms import generation as generation_forms
from rubric_lab.models import (
    AblationStudy,
    AblationVariant,
    CoverageCase,
    CoverageRun,
    ExpertCriteriaUpload,
    GenerationJob,
    InstanceRubric,
    NearMiss,
    Refinement,
    RefineStudy,
    RubricGeneration,
    SensitivityStudy,
)
from rubric_lab.services import (
    ablations,
    budgets,
    coverage,
    exports,
    imports,
    pipeline,
    refine,
    sensitivity,
)
from rubric_lab.services import evaluation_work as work
from rubric_lab.views.generation import LAUNCH_OPTIONS

router = Router(tags=["rubric lab"])
SAMPLING_KEYS = ("temperature", "top_p")


# --- launches through the page's form -------------------------------------------------------------


def lab_form(form_class: type[forms.Form], fields: dict) -> forms.Form:
    """The lab page's form filled from a launch's `fields` (None: the page's default); a
    field the form does not have (batch mode where a stage offers none) is a 400, never
    silently dropped."""
    given = {name: value for name, value in fields.items() if value is not None}
    unknown = sorted(set(given) - set(form_class().fields))
    if unknown:
        raise Refused(
            f"This launch takes no {', '.join(unknown)}.",
            [{"location": f"body.{name}", "message": "not offered here"} for name in unknown],
        )
    # A tuple reaches a multiple choice as the list it is (api.forms joins lists of text).
    given = {name: tuple(v) if isinstance(v, list) else v for name, v in given.items()}
    return form_checked(form_class, given)


def launched(launch: Callable[[], object], refusal: type[Exception]):
    """What the service made; its refusal (an upload's names every bad row) is a 400."""
    try:
        return launch()
    except refusal as failure:
        messages = getattr(failure, "errors", None) or [str(failure)]
        raise Refused(
            " ".join(messages), [{"location": "body", "message": m} for m in messages]
        ) from None


def stage_fields(stage_sampling: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per-stage sampling as the launch form's fields (`temperature_audit`, ...)."""
    fields, errors = {}, []
    for stage, values in stage_sampling.items():
        if stage not in generation_forms.SAMPLED_STAGES:
            stages = ", ".join(generation_forms.SAMPLED_STAGES)
            errors.append(
                {
                    "location": "body.stage_sampling",
                    "message": f"{stage}: not a model stage ({stages})",
                }
            )
            continue
        for key, value in values.items():
            if key not in SAMPLING_KEYS:
                errors.append(
                    {
                        "location": f"body.stage_sampling.{stage}",
                        "message": f"{key}: temperature or top_p",
                    }
                )
            fields[f"{key}_{stage}"] = value
    if errors:
        raise Refused("; ".join(e["message"] for e in errors), errors)
    return fields


# --- what the routes answer -----------------------------------------------------------------------


def job_fields(job) -> dict:
    return {
        "id": job.pk,
        "name": job.name,
        "status": job.status,
        "stop_reason": job.stop_reason,
        "failure_reason": job.failure_reason,
        "cost_limit_usd": job.cost_limit_usd,
        "use_cache": job.use_cache,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
    }


def counts_out(counts: work.Counts) -> dict:
    return {
        "total": counts.total,
        "pending": counts.pending,
        "done": counts.done,
        "percent": counts.percent,
        "counts": counts.counts,
    }


def progress_out(progress: work.Progress) -> dict:
    tokens = {"input_tokens": progress.input_tokens, "output_tokens": progress.output_tokens}
    return counts_out(progress) | tokens | {"cost": progress.cost}


def costs_out(job) -> dict:
    return {"model_costs": budgets.job_model_costs(job), "warning": held("the lab's work")}


def result_table(frame: pd.DataFrame) -> dict:
    """A result table's numbers as rows, each estimate and its interval one object; a figure
    the export leaves blank is null."""
    frame = frame.astype(object).where(frame.notna() & (frame != ""), None)
    columns, rows = table_rows(frame, "")
    return {"columns": columns, "rows": rows}


def table_file(request, job, suffix: str, text_of: Callable[[], str], filename: str):
    """A result table as the page's download: csv, md (Markdown) or tex (LaTeX)."""
    if suffix not in exports.FORMATS:
        raise HttpError(404, f"Table formats: {', '.join(exports.FORMATS)}.")
    return download_response(
        request,
        text_of(),
        filename=f"{filename}.{suffix}",
        content_type=exports.content_type(suffix),
        kind="table",
        target=job,
    )


def units_file(request, job, fmt: str, records_of: Callable, filename: str):
    """A job's units of work, one JSON object per line (jsonl) or one CSV row each."""
    if fmt not in exports.RECORD_FORMATS:
        raise HttpError(404, f"Unit formats: {', '.join(exports.RECORD_FORMATS)}.")
    content_type = "application/x-ndjson" if fmt == "jsonl" else "text/csv"
    return download_response(
        request,
        exports.records_export(records_of(job), fmt),
        filename=f"{filename}.{fmt}",
        content_type=f"{content_type}; charset=utf-8",
        kind="table",
        target=job,
    )


def filtered(found, filters):
    return found.filter(status=filters.status) if filters.status else found


# --- imports: physician criteria ------------------------------------------------------------------


def criteria_import_out(upload: ExpertCriteriaUpload) -> dict:
    return {
        "id": upload.pk,
        "benchmark_set": upload.benchmark_set_id,
        "filename": upload.filename,
        "criteria": upload.criterion_count,
        "created_at": upload.created_at,
    }


@router.post(
    "/lab/imports/healthbench",
    response=responses({201: HealthBenchImportOut}, 400),
    url_name="lab_healthbench_import",
)
def lab_healthbench_import(
    request: HttpRequest,
    file: File[UploadedFile],
    name: Form[str] = "",
    source_subset: Form[bool] = False,
):
    """HealthBench-format JSON Lines (multipart field `file`) as an imported run whose
    conversations keep their physician criteria. Every line is checked first: a 400 names
    each problem with its line (the problem's `errors`) and nothing is saved."""
    form = generation_forms.HealthBenchImportForm(
        data={"name": name, "source_subset": source_subset}, files={"file": file}
    )
    if not form.is_valid():
        raise form_refused(form, location="form")
    try:
        imported = imports.healthbench_import(
            filename=file.name,
            text=imports.healthbench_text(file.read(), file.name),
            name=form.cleaned_data["name"],
            source_subset=form.cleaned_data["source_subset"],
            user=request.user,
        )
    except imports.HealthBenchRefused as refused:
        detail = f"{file.name}: {len(refused.problems)} problem(s); nothing was saved."
        errors = [{"location": "file", "message": problem} for problem in refused.problems]
        raise Refused(detail, errors) from None
    return Status(
        201,
        {
            "run": imported.run.pk,
            "criteria_import": criteria_import_out(imported.upload),
            "conversations": imported.conversations,
            "with_completion": imported.with_completion,
            "with_ideal": imported.with_ideal,
            "left_out": imported.left_out,
            "summary": imports.import_summary(imported),
        },
    )


@router.post(
    "/lab/imports/criteria",
    response=responses({201: CriteriaImportOut}, 400),
    url_name="lab_criteria_import",
)
def lab_criteria_import(request: HttpRequest, file: File[UploadedFile], benchmark_set: Form[int]):
    """Expert criteria for a case set's cases or conversations (multipart `file`: CSV with
    case or conversation, criterion, optional weight and axis, or a JSON list), as the
    coverage page's upload. A 400 names every bad row and nothing is saved."""
    form = evaluation_forms.ExpertCriteriaUploadForm(
        data={"benchmark_set": benchmark_set}, files={"file": file}
    )
    if not form.is_valid():
        raise form_refused(form, location="form")
    try:
        upload = coverage.expert_criteria_upload(
            benchmark_set=form.cleaned_data["benchmark_set"],
            filename=file.name,
            content=form.cleaned_data["text"],
            user=request.user,
        )
    except coverage.UploadError as refused:
        detail = f"{file.name}: {len(refused.errors)} problem(s); nothing was saved."
        raise Refused(
            detail, [{"location": "file", "message": e} for e in refused.errors]
        ) from None
    return Status(201, criteria_import_out(upload))


def criteria_imports_out(page: list[ExpertCriteriaUpload]) -> list[dict]:
    return [criteria_import_out(upload) for upload in page]


@router.get(
    "/lab/imports",
    response=responses({200: list[CriteriaImportOut]}, 400),
    url_name="lab_imports",
)
@paginate(RowsCursorPagination, out=criteria_imports_out)
@known_query()
def lab_import_list(request: HttpRequest):
    """Every file of expert criteria, oldest first: HealthBench imports and uploads."""
    return ExpertCriteriaUpload.objects.all()


@router.get(
    "/lab/imports/{import_id}",
    response=responses({200: CriteriaImportOut}, 404),
    url_name="lab_import",
)
def lab_import_detail(request: HttpRequest, import_id: int):
    return criteria_import_out(get_object_or_404(ExpertCriteriaUpload, pk=import_id))


def criteria_out(page) -> list[dict]:
    return [
        {
            "id": criterion.pk,
            "case": (criterion.entry or criterion.conversation.entry).index,
            "conversation": criterion.conversation.public_id if criterion.conversation_id else None,
            "text": criterion.text,
            "weight": criterion.weight,
            "axis": criterion.axis,
            "tags": criterion.tags,
        }
        for criterion in page
    ]


@router.get(
    "/lab/imports/{import_id}/criteria",
    response=responses({200: list[ExpertCriterionOut]}, 400, 404),
    url_name="lab_import_criteria",
)
@paginate(RowsCursorPagination, out=criteria_out)
@known_query()
def lab_import_criteria(request: HttpRequest, import_id: int):
    """The criteria the file held, in its order."""
    upload = get_object_or_404(ExpertCriteriaUpload, pk=import_id)
    return upload.criteria.select_related("entry", "conversation__entry")


# --- instance-rubric generation -------------------------------------------------------------------


def generation_job_out(job: GenerationJob, progress: dict) -> dict:
    return job_fields(job) | {
        "run": job.run_id,
        "method": job.method,
        "generator_model": job.generator_model,
        "judge_model": job.judge_model,
        "retriever": job.retriever,
        "top_k": job.top_k,
        "audit_rounds": job.audit_rounds,
        "ablations": job.ablations,
        "sampling": job.sampling,
        "progress": progress,
    }


def generation_jobs_out(page: list[GenerationJob]) -> list[dict]:
    progress = pipeline.jobs_progress(page)
    return [generation_job_out(job, progress[job.pk]) for job in page]


def generation_job_detail_out(job: GenerationJob) -> dict:
    progress = pipeline.job_progress(job) | {"cost": pipeline.generation_total_cost(job)}
    return generation_job_out(job, progress) | costs_out(job)


@router.post(
    "/lab/generation-jobs",
    response=responses({201: GenerationJobDetailOut}, 400),
    url_name="lab_generation_launch",
)
def lab_generation_launch(request: HttpRequest, payload: GenerationJobIn):
    """Build an instance rubric for each of a run's scorable conversations (the launch
    page's form: the pipeline or the direct baseline, ablations, sampling per stage)."""
    fields = payload.dict(exclude={"stage_sampling"}) | stage_fields(payload.stage_sampling)
    form = lab_form(generation_forms.PipelineLaunchForm, fields)
    data = form.cleaned_data
    options = {name: data[name] for name in LAUNCH_OPTIONS if name in data}
    job = launched(
        lambda: pipeline.generation_job_launch(
            conversations=form.conversations(),
            run=data["run"],
            sampling=form.sampling(),
            user=request.user,
            **options,
        ),
        pipeline.PipelineLaunchError,
    )
    job_start(job)
    return Status(201, generation_job_detail_out(job))


@router.get(
    "/lab/generation-jobs",
    response=responses({200: list[GenerationJobOut]}, 400),
    url_name="lab_generation_jobs",
)
@paginate(RowsCursorPagination, out=generation_jobs_out)
@known_query(GenerationJobFilters)
def lab_generation_job_list(request: HttpRequest, filters: Query[GenerationJobFilters]):
    """Generation jobs, oldest first, with their conversations' counts; `status` and `run`
    narrow the list."""
    found = filtered(GenerationJob.objects.all(), filters)
    return found.filter(run_id=filters.run) if filters.run is not None else found


@router.get(
    "/lab/generation-jobs/{job_id}",
    response=responses({200: GenerationJobDetailOut}, 404),
    url_name="lab_generation_job",
)
def lab_generation_job(request: HttpRequest, job_id: int):
    """The job's progress, what it spent and its cost per model."""
    return generation_job_detail_out(get_object_or_404(GenerationJob, pk=job_id))


def rubric_out(rubric: InstanceRubric) -> dict:
    criteria = sorted(rubric.criteria.all(), key=lambda criterion: criterion.index)
    return {
        "id": rubric.pk,
        "conversation": rubric.conversation.public_id,
        "positive_total": sum(c.weight for c in criteria if c.weight > 0),
        "criteria": [
            {
                "index": c.index,
                "text": c.text,
                "axis": c.axis,
                "weight": c.weight,
                "fact_ids": c.fact_ids,
                "passage_ids": c.passage_ids,
                "intent_basis": c.intent_basis,
            }
            for c in criteria
        ],
    }


def generations_out(page: list[RubricGeneration]) -> list[dict]:
    rubrics = {
        rubric.generation_id: rubric
        for rubric in InstanceRubric.objects.filter(generation__in=page)
        .select_related("conversation")
        .prefetch_related("criteria")
    }
    return [
        {
            "id": generation.pk,
            "conversation": generation.conversation.public_id,
            "case": generation.conversation.entry.index,
            "source_id": generation.conversation.entry.seed.get("source_id", ""),
            "status": generation.status,
            "current_stage": generation.current_stage,
            "failed_stage": generation.failed_stage,
            "failure_reason": generation.failure_reason,
            "rubric": rubric_out(rubrics[generation.pk]) if generation.pk in rubrics else None,
        }
        for generation in page
    ]


@router.get(
    "/lab/generation-jobs/{job_id}/rubrics",
    response=responses({200: list[GenerationOut]}, 400, 404),
    url_name="lab_generation_rubrics",
)
@paginate(RowsCursorPagination, out=generations_out)
@known_query()
def lab_generation_rubrics(request: HttpRequest, job_id: int):
    """The job's results: per conversation its status and, once made, its rubric."""
    job = get_object_or_404(GenerationJob, pk=job_id)
    return job.generations.select_related("conversation__entry")


@router.get(
    "/lab/generation-jobs/{job_id}/rubrics.{fmt}",
    response=responses({200: None}, 404),
    url_name="lab_generation_rubrics_export",
)
def lab_generation_rubrics_export(request: HttpRequest, job_id: int, fmt: str):
    """Every rubric of the job as JSON Lines or CSV (`manage.py lab_export rubrics`)."""
    job = get_object_or_404(GenerationJob, pk=job_id)
    return units_file(request, job, fmt, pipeline.rubric_records, f"rubrics-{job_id}")


@router.get(
    "/lab/rubrics/{rubric_id}",
    response=responses({200: InstanceRubricDetailOut}, 404),
    url_name="lab_rubric",
)
def lab_rubric(request: HttpRequest, rubric_id: int):
    """One instance rubric with the medical facts and passages its criteria cite."""
    rubric = get_object_or_404(
        InstanceRubric.objects.select_related("generation", "conversation"), pk=rubric_id
    )
    return rubric_out(rubric) | {
        "generation": rubric.generation_id,
        "job": rubric.generation.job_id,
        "facts": rubric.facts,
        "passages": rubric.passages,
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
    return sensitivity_out(study, progress) | costs_out(study)


def _sensitivity(study_id: int) -> SensitivityStudy:
    return get_object_or_404(SensitivityStudy, pk=study_id)


@router.post(
    "/lab/sensitivity-studies",
    response=responses({201: SensitivityDetailOut}, 400),
    url_name="lab_sensitivity_launch",
)
def lab_sensitivity_launch(request: HttpRequest, payload: SensitivityIn):
    """Near-miss pairs of a run's references, each scored by the judge setup: does the judge
    prefer the reference to its slightly worse copy? (The sensitivity page's form.)"""
    fields = payload.dict()
    fields["jury"] = fields["jury"] or juries.jury_demo_ensure().pk
    form = lab_form(evaluation_forms.SensitivityLaunchForm, fields)
    study = launched(
        lambda: sensitivity.study_launch(user=request.user, **form.cleaned_data),
        sensitivity.StudyError,
    )
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
    return coverage_out(run, progress_out(work.progress(run.cases.all()))) | costs_out(run)


def _coverage(run_id: int) -> CoverageRun:
    return get_object_or_404(CoverageRun, pk=run_id)


@router.post(
    "/lab/coverage-runs",
    response=responses({201: CoverageDetailOut}, 400),
    url_name="lab_coverage_launch",
)
def lab_coverage_launch(request: HttpRequest, payload: CoverageIn):
    """How much of the expert criteria each rubric of a generation job covers (recall,
    precision, F1; the coverage page's form). The job's conversations need expert criteria."""
    form = lab_form(evaluation_forms.CoverageLaunchForm, payload.dict())
    run = launched(
        lambda: coverage.coverage_launch(user=request.user, **form.cleaned_data),
        coverage.CoverageError,
    )
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
    return refine_out(study, progress) | costs_out(study)


def _refine(study_id: int) -> RefineStudy:
    return get_object_or_404(RefineStudy, pk=study_id)


@router.post(
    "/lab/refine-studies",
    response=responses({201: RefineDetailOut}, 400),
    url_name="lab_refine_launch",
)
def lab_refine_launch(request: HttpRequest, payload: RefineIn):
    """Critique-then-refine of a generation job's conversations: the rubric arm against
    self-critique (and the expert-criteria oracle), scored by an independent judge (the
    refine page's form)."""
    form = lab_form(evaluation_forms.RefineLaunchForm, payload.dict())
    study = launched(
        lambda: refine.refine_launch(user=request.user, **form.cleaned_data), refine.RefineError
    )
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
    response=responses({201: AblationDetailOut}, 400),
    url_name="lab_ablation_launch",
)
def lab_ablation_launch(request: HttpRequest, payload: AblationIn):
    """The full pipeline, each stage left out and the direct baseline on the same
    conversations, each followed by coverage and sensitivity (the ablation page's form)."""
    form = lab_form(evaluation_forms.AblationLaunchForm, payload.dict())
    study = launched(
        lambda: ablations.ablation_launch(user=request.user, **form.cleaned_data),
        ablations.AblationError,
    )
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
