"""Jury pages: rubrics, juries, scoring jobs and the reports built from their results."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import EVERYONE, STAFF, role_required
from audit.downloads import download_response
from benchmark.forms import optional_decimal, unpriced_models, unpriced_warning
from benchmark.models import Run
from common import live_jobs
from common.figures import FORMATS, inline_svg
from common.figures import render as render_figure
from common.query import query_choice, query_flag
from jobs.services import batches
from jobs.services.queue import held_work_message
from jury import forms
from jury.engine.decision import TARGET_COEFFICIENT
from jury.engine.reliability import RECOMMENDED_REPETITIONS
from jury.engine.rubrics import RubricError
from jury.engine.variance import COMPONENT_NAMES
from jury.models import Jury, RubricVersion, ScoringJob
from jury.services import (
    forecasts,
    juries,
    leaderboard,
    planning,
    reports,
    rubrics,
    score_exports,
    scoring,
    scoring_batches,
)
from jury.services.corrections import corrected_method, job_corrected, job_corrected_export
from jury.services.fidelity_split import fidelity_split
from jury.services.figures import FIGURES, report_figure, sensitivity_figure
from jury.services.scoring import scoring_start
from llm.engine.forecast import page_context as forecast_page_context

# The clinician-corrected scores of the target studies drawn from a job (jury.services.corrections).
CORRECTED_TABLE = "corrected"

# --- rubrics -------------------------------------------------------------------------------


@role_required(*EVERYONE)
def rubric_list(request: HttpRequest) -> HttpResponse:
    versions = rubrics.rubrics_visible_to(request.user)
    return render(
        request,
        "jury/rubrics.html",
        {
            "current": versions.filter(is_current=True),
            "older": versions.filter(is_current=False),
        },
    )


@role_required(*EVERYONE)
def rubric_detail(request: HttpRequest, pk: int) -> HttpResponse:
    version = _visible_rubric(request, pk)
    return render(
        request,
        "jury/rubric_detail.html",
        {
            "version": version,
            "rubric": rubrics.rubric_of(version),
            "history": rubrics.rubrics_visible_to(request.user).filter(rubric_id=version.rubric_id),
        },
    )


def _visible_rubric(request: HttpRequest, pk: int) -> RubricVersion:
    version = get_object_or_404(RubricVersion, pk=pk)
    if not rubrics.rubrics_visible_to(request.user).filter(pk=pk).exists():
        raise PermissionDenied("This rubric belongs to the other annotation track.")
    return version


@role_required(*STAFF)
def rubric_new_version(request: HttpRequest, pk: int) -> HttpResponse:
    base = get_object_or_404(RubricVersion, pk=pk)
    form = forms.RubricVersionForm(request.POST or None, base=base)
    if request.method == "POST" and form.is_valid():
        try:
            version = rubrics.rubric_version_create(
                rubric_id=base.rubric_id,
                yaml_text=form.cleaned_data["yaml_text"],
                note=form.cleaned_data["note"],
                user=request.user,
            )
        except RubricError as error:
            form.add_error("yaml_text", str(error))
        else:
            messages.success(request, f"Saved {version}; it is now the current version.")
            return redirect("jury:rubric", version.pk)
    return render(request, "jury/rubric_form.html", {"form": form, "base": base})


# --- juries --------------------------------------------------------------------------------


@role_required(*STAFF)
def jury_list(request: HttpRequest) -> HttpResponse:
    juries.jury_demo_ensure()
    versions = rubrics.current_versions(judged_only=True)
    form = forms.JuryForm(
        request.POST or None,
        default_weights=rubrics.current_weights(),
        rubric_names={v.rubric_id: v.name for v in versions},
    )
    if request.method == "POST" and form.is_valid():
        jury = juries.jury_create(**form.jury_arguments(), actor=request.user)
        messages.success(request, f"Created the jury {jury.name}.")
        for model in form.unpriced():
            messages.warning(request, unpriced_warning(model))
        return redirect("jury:juries")
    return render(
        request,
        "jury/juries.html",
        {
            "families": juries.jury_families(),
            "form": form,
            "versions": versions,
        },
    )


@role_required(*STAFF)
def jury_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One jury version: its settings, its whole calibration and what it learned from."""
    jury = get_object_or_404(Jury, pk=pk)
    return render(
        request,
        "jury/jury_detail.html",
        {
            "jury": jury,
            "family": juries.jury_versions(jury),
            "rubrics": juries.calibration_view(jury),
            "learned": juries.learned_conversations(jury),
        },
    )


# --- scoring jobs --------------------------------------------------------------------------


@role_required(*STAFF)
def score_run(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    juries.jury_demo_ensure()
    form = forms.ScoreRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = scoring.scoring_launch(run=run, user=request.user, **form.cleaned_data)
        except scoring.ScoringError as error:
            form.add_error(None, str(error))
        else:
            queued = scoring_start(job)
            messages.success(request, f"Queued {queued} judge calls.")
            if held := held_work_message("the scoring job"):
                messages.error(request, held)
            for model in unpriced_models(job.jury.judges):
                messages.warning(request, unpriced_warning(model))
            return redirect("jury:job", job.pk)
    return render(
        request,
        "jury/score_run.html",
        {
            "run": run,
            "form": form,
            "jobs": run.scoring_jobs.select_related("jury"),
            "scorable": run.conversations.scorable().count(),
            "total": run.conversations.count(),
        },
    )


@role_required(*STAFF)
def score_forecast(request: HttpRequest, run_id: int) -> HttpResponse:
    """The scoring page's forecast panel for the chosen jury (htmx, on change)."""
    run = get_object_or_404(Run, pk=run_id)
    form = forms.ScoreRunForm(request.GET)
    if not form.is_valid() and "jury" in form.errors:
        context = {"waiting": "Choose a jury to see the forecast."}
    else:
        jury = form.cleaned_data["jury"]
        batch = form.cleaned_data.get("batch", False)
        context = forecast_page_context(forecasts.scoring_forecast(run=run, jury=jury, batch=batch))
    return render(request, "benchmark/_forecast.html", context)


@role_required(*STAFF)
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ScoringJob.objects.select_related("run", "jury"), pk=pk)
    context = {
        "job": job,
        "progress": scoring.scoring_progress(job),
        "unusable": scoring.unusable_answers(job)[:200],
        "counts": reports.Report(job).counts,
        "judge_costs": scoring.judge_costs(job),
        "batches": scoring_batches.batch_progress(job) if job.batch else [],
        "batch_poll_seconds": round(batches.poll_seconds()),
    }
    context["versions"] = job.rubric_versions.all()
    context["live"] = live_jobs.live_region(
        request, "job-progress", polling=live_jobs.is_running(job.status)
    )
    return live_jobs.live_page(request, "jury/job_detail.html", context, region="job-live")


@role_required(*STAFF)
@require_POST
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ScoringJob, pk=pk)
    scoring.scoring_relaunch(job)
    queued = scoring_start(job)
    messages.success(request, f"Queued {queued} judge calls; valid scores were kept.")
    if held := held_work_message("the retry"):
        messages.error(request, held)
    return redirect("jury:job", pk)


@role_required(*STAFF)
@require_POST
def job_resume(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ScoringJob.objects.select_related("jury"), pk=pk)
    try:
        scoring.scoring_resume(job, cost_limit_usd=optional_decimal(request.POST.get("cost_limit")))
    except ValueError as error:  # a bad amount, or a limit the spend already reaches
        messages.error(request, str(error))
    else:
        queued = scoring_start(job)
        messages.success(request, f"Resumed: {queued} judge calls queued.")
        if held := held_work_message("the scoring job"):
            messages.error(request, held)
    return redirect("jury:job", pk)


@role_required(*STAFF)
def job_scores_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    """Every judge score of the job (CSV, JSONL or Parquet), streamed."""
    if fmt not in score_exports.FORMATS:
        raise Http404("Export formats: csv, jsonl, parquet.")
    job = get_object_or_404(ScoringJob, pk=pk)
    return download_response(
        request,
        score_exports.judge_scores_export(job, fmt),
        filename=f"job-{pk}-scores.{fmt}",
        content_type=score_exports.FORMATS[fmt],
        kind="table",
        target=job,
    )


# --- reports -------------------------------------------------------------------------------


@role_required(*STAFF)
def report_list(request: HttpRequest) -> HttpResponse:
    jobs = ScoringJob.objects.select_related("run", "jury")
    return render(
        request,
        "jury/reports.html",
        {
            "jobs": [(job, scoring.scoring_progress(job)) for job in jobs[:100]],
        },
    )


@role_required(*STAFF)
def leaderboard_page(request: HttpRequest) -> HttpResponse:
    jobs = leaderboard.leaderboard_jobs()
    entries = leaderboard.leaderboard_entries(jobs)
    return render(request, "jury/leaderboard.html", {"entries": entries, "shown": len(jobs)})


def _report(pk: int) -> reports.Report:
    return reports.Report(
        get_object_or_404(ScoringJob.objects.select_related("run", "jury"), pk=pk)
    )


@role_required(*STAFF)
def report(request: HttpRequest, pk: int) -> HttpResponse:
    data = _report(pk)
    corrected = job_corrected(data.job)  # clinician-corrected scores of the target studies
    context = {
        "report": data,
        "job": data.job,
        "outcomes": reports.outcome_rows(data),
        "tab": "models",
        "pass_rates": query_flag(request.GET, "pass_rates", on="show", off="hide"),
        "show_corrected": query_flag(request.GET, "corrected", on="show", off="hide"),
        "corrected": corrected,
        "corrected_method": corrected_method(),
    }
    fragment = query_choice(request.GET, "fragment", ["models"])
    if not data.empty:
        table = reports.model_table(data)
        context["models"] = reports.model_rows(data, table, reports.best_marks(data, table))
        _attach_corrected(context["models"], corrected)
        if fragment and request.htmx:
            return render(request, "jury/report.html#model-table", context)
        context.update(
            {
                "spread": reports.spread_table(data).to_dict("split"),
                "figures": {
                    kind: inline_svg(report_figure(data, kind), salt=f"job-{kind}")
                    for kind in FIGURES
                },
                "formats": FORMATS,
                "reliability_repetitions": RECOMMENDED_REPETITIONS,
                "variance": reports.variance_rows(data),
                "component_names": list(COMPONENT_NAMES.values()),
                "fidelity_split": fidelity_split(data),
            }
        )
    return render(request, "jury/report.html", context)


@role_required(*STAFF)
def report_figure_download(request: HttpRequest, pk: int, kind: str, fmt: str) -> HttpResponse:
    """A figure of the report as SVG, PNG (300 dpi) or PDF, for a paper."""
    if kind not in FIGURES or fmt not in FORMATS:
        raise Http404("No such figure or format.")
    data = _report(pk)
    if data.empty:
        raise Http404("No complete conversations to draw yet.")
    body = render_figure(report_figure(data, kind), fmt, salt=f"job-{kind}")
    return download_response(
        request,
        body,
        filename=f"job-{pk}-{kind}.{fmt}",
        content_type=FORMATS[fmt],
        kind="figure",
        target=data.job,
    )


@role_required(*STAFF)
def comparison(request: HttpRequest, pk: int) -> HttpResponse:
    data = _report(pk)
    context = {
        "report": data,
        "job": data.job,
        "tab": "comparison",
        "method": reports.COMPARISON_METHOD,
    }
    if not data.empty:
        result = reports.comparisons(data, reports.model_table(data))
        context["sections"] = reports.comparison_sections(data, result)
    return render(request, "jury/comparison.html", context)


def _attach_corrected(models: list[dict], corrected) -> None:
    """Each Table 4 rubric cell gets the newest target study's clinician-corrected score of
    that model and rubric (None when no study was drawn from this job)."""
    rows = next((rows for _, rows in corrected if rows), [])
    scores = {(row.model, row.rubric.rubric_id): row.score for row in rows}
    for model in models:
        for rubric in model["rubrics"]:
            rubric["corrected"] = scores.get((model["model"], rubric["rubric"]))


@role_required(*STAFF)
def report_export(request: HttpRequest, pk: int, table: str, suffix: str) -> HttpResponse:
    tables = (*reports.EXPORT_TABLES, CORRECTED_TABLE)
    if table not in tables or suffix not in reports.EXPORT_FORMATS:
        raise Http404("No such table or format.")
    data = _report(pk)
    if table == CORRECTED_TABLE:
        text = job_corrected_export(data.job, reports.EXPORT_FORMATS[suffix][0])
    elif data.empty and table != "outcomes":
        raise Http404("No complete conversations to export yet.")
    else:
        text = reports.export_text(data, table, suffix)
    return download_response(
        request,
        text,
        filename=f"job-{pk}-{table}.{suffix}",
        content_type=f"{reports.EXPORT_FORMATS[suffix][1]}; charset=utf-8",
        kind="table",
        target=data.job,
    )


@role_required(*STAFF)
def sensitivity(request: HttpRequest, pk: int) -> HttpResponse:
    data = _report(pk)
    measures = reports.measures(data)
    measure = query_choice(request.GET, "measure", measures, default="aggregate")
    sections = [] if data.empty else reports.sensitivity_sections(data, measure)
    return render(
        request,
        "jury/sensitivity.html",
        {
            "report": data,
            "job": data.job,
            "tab": "sensitivity",
            "measures": measures,
            "measure": measure,
            "sections": sections,
            "formats": FORMATS,
        },
    )


@role_required(*STAFF)
def sensitivity_figure_download(
    request: HttpRequest, pk: int, attribute: str, fmt: str
) -> HttpResponse:
    """The subgroups of one attribute on the chosen score (`measure`), as on the sensitivity
    tab, as SVG, PNG (300 dpi) or PDF."""
    if attribute not in reports.ATTRIBUTES or fmt not in FORMATS:
        raise Http404("No such figure or format.")
    data = _report(pk)
    measures = reports.measures(data)
    measure = query_choice(request.GET, "measure", measures, default="aggregate")
    if data.empty:
        raise Http404("No complete conversations to draw yet.")
    figure = sensitivity_figure(data, measure, attribute, measures[measure])
    body = render_figure(figure, fmt, salt=f"sensitivity-{measure}-{attribute}")
    return download_response(
        request,
        body,
        filename=f"job-{pk}-sensitivity-{measure}-{attribute}.{fmt}",
        content_type=FORMATS[fmt],
        kind="figure",
        target=data.job,
    )


@role_required(*STAFF)
def judges(request: HttpRequest, pk: int) -> HttpResponse:
    data = _report(pk)
    context = {"report": data, "job": data.job, "tab": "judges"}
    if not data.empty:
        scores = reports.judge_scores(data)
        context.update(
            {
                "judge_rows": reports.judge_rows(data, scores),
                "agreement": reports.agreement_rows(data, scores),
            }
        )
    context["judge_costs"] = scoring.judge_costs(data.job)
    return render(request, "jury/judges.html", context)


@role_required(*STAFF)
def failures(request: HttpRequest, pk: int) -> HttpResponse:
    data = _report(pk)
    rubric = query_choice(request.GET, "rubric", data.rubrics, default=next(iter(data.rubrics)))
    offered = reports.failure_filters(data)
    chosen = {a: v for a in reports.ATTRIBUTES if (v := query_choice(request.GET, a, offered[a]))}
    options = [
        {
            "name": attribute,
            "title": reports.ATTRIBUTES[attribute],
            "values": values,
            "chosen": chosen.get(attribute, ""),
        }
        for attribute, values in offered.items()
    ]
    agent = query_choice(request.GET, "agent", data.agents)
    return render(
        request,
        "jury/failures.html",
        {
            "report": data,
            "job": data.job,
            "tab": "failures",
            "rubric": rubric,
            "options": options,
            "chosen": chosen,
            "agent": agent,
            "results": reports.lowest_scoring(data, rubric=rubric, agent_id=agent, filters=chosen),
        },
    )


# --- planning a run ----------------------------------------------------------------------


@role_required(*STAFF)
def plan(request: HttpRequest) -> HttpResponse:
    """Plan a run from an earlier scored run: the numbers that reach a precision, and their cost."""
    set_id = request.GET.get("set", "")
    sources = planning.plan_sources(int(set_id) if set_id.isdigit() else None)
    newest = sources.first()
    if "job" in request.GET or newest is None:
        data = request.GET
    else:
        data = PLAN_DEFAULTS | {"job": str(newest.pk)}
    form = forms.PlanForm(data, sources=sources)
    context = {"form": form, "set_id": set_id}
    if newest is not None and form.is_valid():
        try:
            context["plan"] = result = planning.run_plan(
                form.cleaned_data["job"],
                measure=form.cleaned_data["measure"],
                what_if=form.what_if(),
                **form.targets(),
            )
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            context["sections"] = planning.model_sections(result)
    return render(request, "jury/plan.html", context)


# What the plan page shows before anyone chose: the newest source, the aggregate, +/- 0.1.
PLAN_DEFAULTS = {
    "measure": "aggregate",
    "target": "half_width",
    "half_width": "0.1",
    "goal": str(TARGET_COEFFICIENT),
}
