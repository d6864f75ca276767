"""The rubric lab as JSON, generation side: physician-criteria imports, instance-rubric
generation jobs and their rubrics; and the helpers every lab route shares (the evaluation
studies are in api.routes.lab_studies). Every launch goes through the lab page's form and
service and starts its job as the page does; the answer carries the job's progress to poll."""

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

from api.filters import GenerationJobFilters, KnowledgeSearchFilters, known_query
from api.forms import form_checked, form_refused
from api.jobs import held
from api.lab_schemas import (
    CriteriaImportOut,
    ExpertCriterionOut,
    GenerationJobDetailOut,
    GenerationJobIn,
    GenerationJobOut,
    GenerationOut,
    HealthBenchImportOut,
    InstanceRubricDetailOut,
    InstanceScoreIn,
    InstanceScoreOut,
    KnowledgeHitOut,
    KnowledgeUploadOut,
    PassageOut,
)
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.schemas import ForecastOut
from api.tables import table_rows
from audit.downloads import download_response
from jobs.services.starts import job_start
from llm.engine.forecast import as_dict
from rubric_lab.engine.knowledge import CorpusError
from rubric_lab.forms import evaluation as evaluation_forms
from rubric_lab.forms import generation as generation_forms
from rubric_lab.models import (
    ExpertCriteriaUpload,
    GenerationJob,
    InstanceRubric,
    InstanceScore,
    KnowledgePassage,
    RubricGeneration,
)
from rubric_lab.services import (
    budgets,
    coverage,
    exports,
    generation_batches,
    imports,
    instance_scoring,
    knowledge,
    pipeline,
    study_forecasts,
)
from rubric_lab.services import evaluation_work as work
from rubric_lab.views.generation import LAUNCH_OPTIONS, SEARCH_RESULTS

router = Router(tags=["rubric lab"])
SAMPLING_KEYS = ("temperature", "top_p")


# --- launches through the page's form -------------------------------------------------------------


def lab_form(form_class: type[forms.Form], fields: dict) -> forms.Form:
    """The lab page's form filled from a launch's `fields` (None: the page's default); a
    field the form does not have (batch mode, on a study that does not offer it) is a 400 when it
    asks for something, never silently dropped; switched off (false) it asks for nothing."""
    offered = set(form_class().fields)
    given = {
        name: value
        for name, value in fields.items()
        if value is not None and (name in offered or value is not False)
    }
    unknown = sorted(set(given) - offered)
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


def dry_run_answer(launch: Callable[[], object], refusal: type[Exception]):
    """A launch asked with dry_run: its forecast (200), with nothing kept; its refusal a 400."""
    result = launched(lambda: study_forecasts.launch_forecast(launch), refusal)
    return Status(200, as_dict(result))


def stage_fields(stage_sampling: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per-stage sampling as the launch form's fields (`temperature_audit`, ...)."""
    fields, errors = {}, []
    stages = ", ".join(generation_forms.SAMPLED_STAGES)
    for stage, values in stage_sampling.items():
        if stage not in generation_forms.SAMPLED_STAGES:
            errors.append(("body.stage_sampling", f"{stage}: not a model stage ({stages})"))
            continue
        for key, value in values.items():
            if key in SAMPLING_KEYS:
                fields[f"{key}_{stage}"] = value
            else:
                errors.append((f"body.stage_sampling.{stage}", f"{key}: temperature or top_p"))
    if errors:
        problems = [{"location": where, "message": message} for where, message in errors]
        raise Refused("; ".join(message for _, message in errors), problems)
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
    # Every lab table names an interval after its estimate (auroc, auroc_low, auroc_high):
    # none bounds a bare estimate.
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
    batch = {
        "batch": job.batch,
        "batch_resend_live": job.batch_resend_live,
        "batches": generation_batches.batch_progress(job) if job.batch else [],
    }
    return generation_job_out(job, progress) | costs_out(job) | batch


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
    options = {name: data[name] for name in LAUNCH_OPTIONS}
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


# --- scoring with an instance rubric -----------------------------------------------------------


def instance_score_out(score: InstanceScore) -> dict:
    decisions = score.decisions.select_related("criterion")
    return {
        "id": score.pk,
        "rubric": score.rubric_id,
        "conversation": score.conversation.public_id,
        "judge_model": score.judge_model,
        "status": score.status,
        "weighted_sum": score.weighted_sum,
        "positive_total": score.positive_total,
        "normalised": score.normalised,
        "failure_reason": score.failure_reason,
        "input_tokens": score.input_tokens,
        "output_tokens": score.output_tokens,
        "cost_usd": score.cost_usd,
        "created_at": score.created_at,
        "finished_at": score.finished_at,
        "decisions": [
            {
                "criterion": decision.criterion.index,
                "text": decision.criterion.text,
                "weight": decision.criterion.weight,
                "met": decision.met,
                "reason": decision.reason,
                "cached": decision.cached,
            }
            for decision in decisions
        ],
    }


@router.post(
    "/lab/rubrics/{rubric_id}/scores",
    response=responses({201: InstanceScoreOut, 200: ForecastOut}, 400, 404),
    url_name="lab_rubric_score",
)
def lab_rubric_score(request: HttpRequest, rubric_id: int, payload: InstanceScoreIn):
    """Score a reply to the rubric's case with it, criterion by criterion (the rubric page's
    form); poll the score until it is no longer pending. A valid score already made by the
    same judge is answered as it is."""
    rubric = get_object_or_404(InstanceRubric.objects.select_related("conversation"), pk=rubric_id)
    conversations = instance_scoring.same_case_conversations(rubric)
    form = form_checked(
        generation_forms.InstanceScoreForm,
        payload.dict(exclude={"dry_run"}),
        conversations=conversations,
    )
    if payload.dry_run:
        result = study_forecasts.score_forecast(rubric=rubric, **form.cleaned_data)
        return Status(200, as_dict(result))
    score = launched(
        lambda: instance_scoring.instance_score_launch(rubric=rubric, **form.cleaned_data),
        instance_scoring.InstanceScoringError,
    )
    job_start(score)
    return Status(201, instance_score_out(score))


@router.get(
    "/lab/instance-scores/{score_id}",
    response=responses({200: InstanceScoreOut}, 404),
    url_name="lab_instance_score",
)
def lab_instance_score(request: HttpRequest, score_id: int):
    """The score with each criterion's decision and the judge's reason."""
    score = get_object_or_404(InstanceScore.objects.select_related("conversation"), pk=score_id)
    return instance_score_out(score)


# --- the knowledge base -----------------------------------------------------------------------


def passages_out(page: list[KnowledgePassage]) -> list[dict]:
    return [
        {
            "passage_id": row.passage_id,
            "topic": row.topic,
            "title": row.title,
            "text": row.text,
            "source": row.source,
            "source_version": row.source_version,
            "tags": row.tags,
            "origin": row.origin,
        }
        for row in page
    ]


@router.get(
    "/lab/knowledge",
    response=responses({200: list[PassageOut]}, 400),
    url_name="lab_knowledge",
)
@paginate(RowsCursorPagination, out=passages_out)
@known_query()
def lab_knowledge(request: HttpRequest):
    """Every passage the pipeline retrieves from: the shipped corpus and uploads."""
    knowledge.knowledge_ensure_shipped()
    return KnowledgePassage.objects.all()


@router.get(
    "/lab/knowledge/search",
    response=responses({200: list[KnowledgeHitOut]}, 400),
    url_name="lab_knowledge_search",
)
@known_query(KnowledgeSearchFilters)
def lab_knowledge_search(request: HttpRequest, filters: Query[KnowledgeSearchFilters]):
    """The passages closest to `q`, best first, as the pipeline's retriever finds them."""
    knowledge.knowledge_ensure_shipped()
    hits = knowledge.knowledge_search(filters.q, kind=filters.retriever, k=SEARCH_RESULTS)
    return [hit.passage.as_dict() | {"score": hit.score} for hit in hits]


@router.post(
    "/lab/knowledge",
    response=responses({201: KnowledgeUploadOut}, 400),
    url_name="lab_knowledge_upload",
)
def lab_knowledge_upload(request: HttpRequest, file: File[UploadedFile]):
    """Passages to add (multipart `file`: CSV, JSON or YAML rows with passage_id, topic,
    title, text, source, source_version and optional tags). A 400 names every bad row and
    field; nothing is saved."""
    form = generation_forms.KnowledgeUploadForm(files={"file": file})
    if not form.is_valid():
        raise form_refused(form, location="form")
    try:
        saved = knowledge.knowledge_upload(
            filename=file.name, content=file.read(), user=request.user
        )
    except CorpusError as error:
        detail = f"{file.name}: {len(error.problems)} problem(s); nothing was saved."
        raise Refused(
            detail, [{"location": "file", "message": p} for p in error.problems]
        ) from None
    return Status(
        201,
        {
            "id": saved.pk,
            "filename": saved.filename,
            "passages": saved.passage_count,
            "created_at": saved.created_at,
        },
    )
