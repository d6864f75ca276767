"""Scoring jobs, judge scores and the report tables of the jury pages, as JSON."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status
from ninja.errors import HttpError
from ninja.pagination import paginate

from api.files import figure_file, offered, table_file
from api.filters import ScoreFilters, ScoringJobFilters, known_query
from api.forms import form_checked
from api.frames import plain
from api.jobs import held
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.schemas import (
    ForecastOut,
    JuryOut,
    ModelTableOut,
    ReportTableOut,
    RubricOut,
    ScoreOut,
    ScoringJobDetailOut,
    ScoringJobIn,
    ScoringJobLaunchOut,
    ScoringJobOut,
)
from api.tables import table_frame, table_rows
from audit.downloads import download_response
from benchmark.forms import unpriced_models, unpriced_warning
from benchmark.models import Run
from common.figures import FORMATS as FIGURE_FORMATS
from common.query import query_choice
from jury import forms
from jury.models import JudgeScore, Jury, RubricVersion, ScoringJob
from jury.services import forecasts, juries, reports, score_exports, scoring, scoring_batches
from jury.services.figures import FIGURES, report_figure
from jury.services.scoring import scoring_start
from llm.engine.forecast import as_dict

router = Router(tags=["jury"])


def job_out(job: ScoringJob, progress: dict) -> dict:
    return {
        "id": job.pk,
        "run": job.run_id,
        "jury": {"id": job.jury_id, "name": job.jury.name, "judges": job.jury.judges},
        "status": job.status,
        "cost_limit_usd": job.cost_limit_usd,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "progress": progress,
        "batch": job.batch,
    }


def jobs_out(page: list[ScoringJob]) -> list[dict]:
    counts = scoring.scoring_jobs_counts(page)
    return [job_out(job, counts[job.pk]) for job in page]


def job_detail_out(job: ScoringJob) -> dict:
    conversations = reports.Report(job).counts
    batches = scoring_batches.batch_progress(job) if job.batch else []
    return job_out(job, scoring.scoring_progress(job)) | {
        "conversations": conversations,
        "batches": batches,
    }


def scores_out(page: list[JudgeScore]) -> list[dict]:
    return [score_out(score) for score in page]


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


@router.post(
    "/scoring-jobs",
    response=responses({201: ScoringJobLaunchOut, 200: ForecastOut}, 400, 404),
    url_name="scoring_job_launch",
)
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
        raise Refused(str(error)) from None
    queued = scoring_start(job)
    warnings = [unpriced_warning(model) for model in unpriced_models(job.jury.judges)]
    extra = {"queued": queued, "warning": held("the scoring job"), "unpriced": warnings}
    return Status(201, job_detail_out(job) | extra)


@router.get(
    "/scoring-jobs", response=responses({200: list[ScoringJobOut]}, 400), url_name="scoring_jobs"
)
@paginate(RowsCursorPagination, out=jobs_out)
@known_query(ScoringJobFilters)
def scoring_job_list(request: HttpRequest, filters: Query[ScoringJobFilters]):
    """Scoring jobs, oldest first, with their judge scores' counts (`GET /scoring-jobs/{id}`
    adds tokens, cost and the conversations' counts); `status` and `run` narrow the list."""
    found = ScoringJob.objects.select_related("jury")
    if filters.status:
        found = found.filter(status=filters.status)
    if filters.run is not None:
        found = found.filter(run_id=filters.run)
    return found


@router.get(
    "/scoring-jobs/{job_id}",
    response=responses({200: ScoringJobDetailOut}, 404),
    url_name="scoring_job",
)
def scoring_job_detail(request: HttpRequest, job_id: int):
    return job_detail_out(_job(job_id))


@router.get(
    "/scoring-jobs/{job_id}/scores",
    response=responses({200: list[ScoreOut]}, 400, 404),
    url_name="judge_scores",
)
@paginate(RowsCursorPagination, out=scores_out)
@known_query(ScoreFilters)
def judge_score_list(request: HttpRequest, job_id: int, filters: Query[ScoreFilters]):
    """Every judge score of the job; filters `rubric`, `status`, `judge` (its seat from 0)."""
    job = _job(job_id)
    scores = job.scores.select_related("conversation", "rubric_version")
    # The rubrics and seats depend on the job: checked here, a 400 like any unknown value.
    rubric = query_choice(request.GET, "rubric", reports.Report(job).rubrics)
    if filters.judge is not None and filters.judge >= len(job.jury.judges):
        seats = len(job.jury.judges)
        raise Refused(
            f"The jury has {seats} judges: `judge` is a seat from 0 to {seats - 1}.",
            [{"location": "query.judge", "message": f"at most {seats - 1}"}],
        )
    if rubric:
        scores = scores.filter(rubric_version__rubric_id=rubric)
    if filters.status:
        scores = scores.filter(status=filters.status)
    if filters.judge is not None:
        scores = scores.filter(judge_index=filters.judge)
    return scores


@router.get(
    "/scoring-jobs/{job_id}/scores.{fmt}",
    response=responses({200: None}, 404),
    url_name="judge_scores_export",
)
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


@router.get(
    "/scoring-jobs/{job_id}/models",
    response=responses({200: ModelTableOut}, 404),
    url_name="model_table",
)
def model_table(request: HttpRequest, job_id: int):
    """Table 4 of the report page: per model the aggregate with its 95% CI, its paired standing
    against the best model, and per rubric the jury mean and pass rate (percent) with its
    Wilson CI."""
    report = reports.Report(_job(job_id))
    rows = []
    if not report.empty:
        table = reports.model_table(report)
        rows = reports.model_rows(report, table, reports.best_marks(report, table))
    return {"counts": report.counts, "models": [_model_row(row) for row in rows]}


@router.get(
    "/scoring-jobs/{job_id}/figures/{kind}.{fmt}",
    response=responses({200: None}, 404),
    url_name="report_figure",
)
def report_figure_download(request: HttpRequest, job_id: int, kind: str, fmt: str):
    """A figure of the report as the report page offers it: `kind` aggregates, pass-rates,
    pass-k or variance; `fmt` svg, png (300 dpi) or pdf."""
    offered(kind, FIGURES, fmt, FIGURE_FORMATS, "Figures")
    report = reports.Report(_job(job_id))
    if report.empty:
        raise HttpError(404, "No complete conversations to draw yet.")
    return figure_file(
        request,
        report_figure(report, kind),
        fmt,
        salt=f"job-{kind}",
        filename=f"job-{job_id}-{kind}.{fmt}",
        target=report.job,
    )


@router.get(
    "/scoring-jobs/{job_id}/tables/{table}.{suffix}",
    response=responses({200: None}, 404),
    url_name="report_table_export",
)
def report_table_export(request: HttpRequest, job_id: int, table: str, suffix: str):
    """A report table as the report page exports it: `suffix` csv, md (Markdown) or tex
    (LaTeX, with its caption). Declared before `/tables/{table}`, which would take the dot."""
    offered(table, reports.EXPORT_TABLES, suffix, reports.EXPORT_FORMATS, "Tables")
    report = reports.Report(_job(job_id))
    if report.empty and table != "outcomes":
        raise HttpError(404, "No complete conversations to export yet.")
    return table_file(
        request,
        reports.export_text(report, table, suffix),
        reports.EXPORT_FORMATS[suffix][1],
        filename=f"job-{job_id}-{table}.{suffix}",
        target=report.job,
    )


@router.get(
    "/scoring-jobs/{job_id}/tables/{table}",
    response=responses({200: ReportTableOut}, 404),
    url_name="report_table",
)
def report_table(request: HttpRequest, job_id: int, table: str):
    """A report table's figures as numbers, intervals as objects: models, spread, outcomes,
    sensitivity, agreement (between the judges), comparison (paired), reliability (pass^k),
    variance (its components)."""
    if table not in reports.EXPORT_TABLES:
        raise HttpError(404, f"No table {table!r}; tables: {', '.join(reports.EXPORT_TABLES)}.")
    report = reports.Report(_job(job_id))
    answer = {"table": table, "caption": reports.EXPORT_CAPTIONS[table], "counts": report.counts}
    if report.empty and table != "outcomes":
        return answer | {"columns": [], "rows": []}
    columns, rows = table_rows(table_frame(report, table), table)
    return answer | {"columns": columns, "rows": rows}


def _job(job_id: int) -> ScoringJob:
    return get_object_or_404(ScoringJob.objects.select_related("run", "jury"), pk=job_id)


def _model_row(row: dict) -> dict:
    return {
        "model": row["model"],
        "scripted": row["scripted"],
        "n": row["n"],
        "aggregate": _interval(row["mean"], row["low"], row["high"]),
        "versus_best": row["versus_best"],
        "rubrics": [
            {
                "rubric": rubric["rubric"],
                "code": rubric["code"],
                "name": rubric["name"],
                "mean": plain(rubric["mean"]),
                "pass_rate": _interval(
                    rubric["pass_rate"], rubric["pass_low"], rubric["pass_high"]
                ),
            }
            for rubric in row["rubrics"]
        ],
    }


def _interval(estimate, low, high) -> dict:
    return {"estimate": plain(estimate), "low": plain(low), "high": plain(high)}


# --- juries and rubrics ----------------------------------------------------------------------


def jury_out(jury: Jury) -> dict:
    return {
        "id": jury.pk,
        "name": jury.name,
        "judges": jury.judges,
        "weights": jury.weights,
        "pass_threshold": jury.pass_threshold,
        "merge_mode": jury.merge_mode,
        "version": jury.version,
        "base": jury.base_id,
        "calibrated": jury.is_calibrated,
        "learned_from": jury.learned_from or None,
        "note": jury.note,
        "created_at": jury.created_at,
    }


def juries_out(page: list[Jury]) -> list[dict]:
    return [jury_out(jury) for jury in page]


@router.get("/juries", response=responses({200: list[JuryOut]}, 400), url_name="juries")
@paginate(RowsCursorPagination, out=juries_out)
@known_query()
def jury_list(request: HttpRequest):
    """Every jury and every calibrated version of one (each version is a jury with `base`)."""
    return Jury.objects.all()


@router.get("/juries/{jury_id}", response=responses({200: JuryOut}, 404), url_name="jury")
def jury_detail(request: HttpRequest, jury_id: int):
    return jury_out(get_object_or_404(Jury, pk=jury_id))


@router.get(
    "/juries/{jury_id}/versions",
    response=responses({200: list[JuryOut]}, 404),
    url_name="jury_versions",
)
def jury_versions(request: HttpRequest, jury_id: int):
    """The jury's versions, first to last (the first and every calibration of it)."""
    jury = get_object_or_404(Jury, pk=jury_id)
    return [jury_out(each) for each in juries.jury_versions(jury)]  # fold juries left out


def rubric_out(version: RubricVersion) -> dict:
    return {
        "id": version.pk,
        "rubric": version.rubric_id,
        "version": version.version,
        "name": version.name,
        "code": version.code,
        "kind": version.kind,
        "track": version.track,
        "current": version.is_current,
        "fingerprint": version.fingerprint,
        "text": version.yaml_text,
    }


def rubrics_out(page: list[RubricVersion]) -> list[dict]:
    return [rubric_out(version) for version in page]


@router.get("/rubrics", response=responses({200: list[RubricOut]}, 400), url_name="rubrics")
@paginate(RowsCursorPagination, out=rubrics_out)
@known_query()
def rubric_list(request: HttpRequest):
    """Every version of every rubric (`current` marks the versions new work uses)."""
    return RubricVersion.objects.all()


@router.get("/rubrics/{version_id}", response=responses({200: RubricOut}, 404), url_name="rubric")
def rubric_detail(request: HttpRequest, version_id: int):
    return rubric_out(get_object_or_404(RubricVersion, pk=version_id))
