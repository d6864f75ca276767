"""Scoring jobs, judge scores and the report tables of the jury pages, as JSON."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Status
from ninja.errors import HttpError
from ninja.pagination import paginate

from api.forms import form_checked
from api.frames import frame_rows, plain
from api.jobs import held
from api.pagination import RowsCursorPagination
from api.schemas import ForecastOut, ScoringJobIn
from audit.downloads import download_response
from benchmark.forms import unpriced_models, unpriced_warning
from benchmark.models import Run
from common.query import query_choice, query_int
from jury import forms
from jury.models import JudgeScore, ScoreStatus, ScoringJob
from jury.services import forecasts, juries, reports, score_exports, scoring, scoring_batches
from jury.services.scoring import scoring_start
from llm.engine.forecast import as_dict

router = Router(tags=["jury"])


def job_out(job: ScoringJob) -> dict:
    return {
        "id": job.pk,
        "run": job.run_id,
        "jury": {"id": job.jury_id, "name": job.jury.name, "judges": job.jury.judges},
        "status": job.status,
        "cost_limit_usd": job.cost_limit_usd,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "progress": scoring.scoring_progress(job),
        "conversations": reports.Report(job).counts,
        "batch": job.batch,
        "batches": scoring_batches.batch_progress(job) if job.batch else [],
    }


def score_out(score: JudgeScore) -> dict:
    return {
        "id": score.pk,
        "conversation": str(score.conversation.public_id),
        "rubric": score.rubric_version.rubric_id,
        "rubric_version": score.rubric_version.version,
        "judge_index": score.judge_index,
        "judge_model": score.judge_model,
        "status": score.status,
        "score": score.score,
        "explanation": score.explanation,
        "invalid_reason": score.invalid_reason,
        "cost_usd": score.cost_usd,
        "cached": score.cached,
    }


@router.post("/scoring-jobs", response={201: dict, 200: ForecastOut}, url_name="scoring_job_launch")
def scoring_job_launch(request: HttpRequest, payload: ScoringJobIn):
    """Score a run's conversations with a jury (the score page's form and checks); with
    dry_run, answer the forecast of its judge calls and create nothing."""
    run = get_object_or_404(Run, pk=payload.run)
    fields = payload.dict(exclude={"run", "dry_run"})
    fields["jury"] = fields["jury"] or juries.jury_demo_ensure().pk
    form = form_checked(forms.ScoreRunForm, fields)
    if payload.dry_run:
        result = forecasts.scoring_forecast(
            run=run, jury=form.cleaned_data["jury"], batch=form.cleaned_data["batch"]
        )
        return Status(200, as_dict(result))
    try:
        job = scoring.scoring_launch(run=run, user=request.user, **form.cleaned_data)
    except scoring.ScoringError as error:
        raise HttpError(400, str(error)) from None
    queued = scoring_start(job)
    warnings = [unpriced_warning(model) for model in unpriced_models(job.jury.judges)]
    extra = {"queued": queued, "warning": held("the scoring job"), "unpriced": warnings}
    return Status(201, job_out(job) | extra)


@router.get("/scoring-jobs", response=list[dict], url_name="scoring_jobs")
@paginate(RowsCursorPagination, out=job_out)
def scoring_job_list(request: HttpRequest):
    return ScoringJob.objects.select_related("jury")


@router.get("/scoring-jobs/{job_id}", response=dict, url_name="scoring_job")
def scoring_job_detail(request: HttpRequest, job_id: int):
    return job_out(_job(job_id))


@router.get("/scoring-jobs/{job_id}/scores", response=list[dict], url_name="judge_scores")
@paginate(RowsCursorPagination, out=score_out)
def judge_score_list(request: HttpRequest, job_id: int):
    """Every judge score of the job; filters `rubric`, `status`, `judge` (index from 0)."""
    job = _job(job_id)
    scores = job.scores.select_related("conversation", "rubric_version")
    rubric = query_choice(request.GET, "rubric", reports.Report(job).rubrics)
    status = query_choice(request.GET, "status", ScoreStatus.values)
    judge = query_int(request.GET, "judge", min_value=0, max_value=len(job.jury.judges) - 1)
    if rubric:
        scores = scores.filter(rubric_version__rubric_id=rubric)
    if status:
        scores = scores.filter(status=status)
    if judge is not None:
        scores = scores.filter(judge_index=judge)
    return scores


@router.get("/scoring-jobs/{job_id}/scores.{fmt}", url_name="judge_scores_export")
def judge_scores_export(request: HttpRequest, job_id: int, fmt: str):
    """Every judge score of the job as CSV, JSONL or Parquet, streamed (the job page's)."""
    if fmt not in score_exports.FORMATS:
        raise HttpError(404, f"Export formats: {', '.join(score_exports.FORMATS)}.")
    job = _job(job_id)
    return download_response(
        request,
        score_exports.judge_scores_export(job, fmt),
        filename=f"job-{job_id}-scores.{fmt}",
        content_type=score_exports.FORMATS[fmt],
        kind="table",
        target=job,
    )


@router.get("/scoring-jobs/{job_id}/models", response=dict, url_name="model_table")
def model_table(request: HttpRequest, job_id: int):
    """Table 4 of the report page: per model the aggregate with its 95% CI, its paired standing
    against the best model, and per rubric the jury mean and pass rate with its Wilson CI."""
    report = reports.Report(_job(job_id))
    rows = []
    if not report.empty:
        table = reports.model_table(report)
        rows = reports.model_rows(report, table, reports.best_marks(report, table))
    return {"counts": report.counts, "models": _plain_rows(rows)}


@router.get("/scoring-jobs/{job_id}/tables/{table}", response=dict, url_name="report_table")
def report_table(request: HttpRequest, job_id: int, table: str):
    """A report table as its CSV export holds it: models, spread, outcomes, sensitivity,
    agreement (between the judges), comparison (paired)."""
    if table not in reports.EXPORT_TABLES:
        raise HttpError(404, f"No table {table!r}; tables: {', '.join(reports.EXPORT_TABLES)}.")
    report = reports.Report(_job(job_id))
    if report.empty and table != "outcomes":
        return {"counts": report.counts, "rows": []}
    return {"counts": report.counts, "rows": frame_rows(reports.export_frame(report, table))}


def _job(job_id: int) -> ScoringJob:
    return get_object_or_404(ScoringJob.objects.select_related("run", "jury"), pk=job_id)


def _plain_rows(rows: list[dict]) -> list[dict]:
    return [
        {
            key: _plain_rows(value) if isinstance(value, list) else plain(value)
            for key, value in row.items()
        }
        for row in rows
    ]
