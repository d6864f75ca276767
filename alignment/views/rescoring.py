"""Re-scoring a study with another jury configuration, comparing every configuration scored on
it, and the history of its jury's versions. Staff only; the work is in
alignment.services.rescoring and alignment.services.jury_history."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from accounts.access import STAFF, role_required
from alignment.forms.rescoring import RescoreForm, new_jury_form
from alignment.services import exports, figures, jury_history, rescoring
from annotation.models import Study
from audit.downloads import download_response
from common import live_jobs
from common.query import query_choice, query_flag
from jury.services import juries, scoring
from jury.services.scoring import scoring_start


@role_required(*STAFF)
def rescore(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    juries.jury_demo_ensure()
    data = request.POST if request.method == "POST" else None
    form, jury_form = RescoreForm(data, study=study), new_jury_form(data)
    if request.method == "POST" and _valid(form, jury_form):
        jobs = _launch(request, study, form, jury_form)
        if jobs:
            queued = sum(scoring_start(job) for job in jobs)
            messages.success(request, f"Queued {queued} judge calls on {len(jobs)} job(s).")
            return redirect("alignment:loop_comparison", study.pk)
    return render(
        request,
        "alignment/rescore.html",
        {
            "study": study,
            "form": form,
            "jury_form": jury_form,
            "annotated": rescoring.annotated_conversations(study).count(),
            "configurations": rescoring.study_configurations(study),
        },
    )


def _valid(form: RescoreForm, jury_form) -> bool:
    """The new-jury fields are checked only when a new jury is asked for."""
    return form.is_valid() and (not form.creates_jury or jury_form.is_valid())


def _launch(request, study: Study, form: RescoreForm, jury_form) -> list:
    """Create the new jury (if asked) and the jobs together: a refused launch keeps neither."""
    try:
        with transaction.atomic():
            jury = (
                juries.jury_create(**jury_form.jury_arguments(), actor=request.user)
                if form.creates_jury
                else form.existing_jury()
            )
            return rescoring.study_rescore(
                study,
                jury=jury,
                rubric_versions=form.chosen_versions(),
                judge_template=form.cleaned_data["judge_template"],
                use_cache=form.cleaned_data["use_cache"],
                user=request.user,
            )
    except scoring.ScoringError as error:
        form.add_error(None, str(error))
        return []


@role_required(*STAFF)
def comparison(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    configurations = rescoring.study_configurations(study)
    running = [c for c in configurations if c.running]
    context = {
        "study": study,
        "running": _with_progress(running),
        "live": live_jobs.live_region(request, "loop-progress", polling=bool(running)),
    }
    if not live_jobs.is_poll(request):
        result = _comparison(request, study, configurations)
        context |= {
            "comparison": result,
            "metrics": rescoring.METRICS,
            "include_synthetic": result.include_synthetic,
            "csv_url": _csv_url(study, result),
        }
    # The poll that finds the last job finished reloads the page, so the figures include its
    # scores.
    return live_jobs.live_page(
        request,
        "alignment/jury_comparison.html",
        context,
        region="loop-progress",
        reload_when_done=True,
    )


@role_required(*STAFF)
def comparison_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    result = _comparison(request, study, rescoring.study_configurations(study))
    return download_response(
        request,
        rescoring.comparison_csv(result),
        filename=f"study-{study.pk}-juries.csv",
        content_type="text/csv; charset=utf-8",
        kind="table",
        target=study,
    )


def _comparison(request: HttpRequest, study: Study, configurations) -> rescoring.Comparison:
    return rescoring.jury_comparison(
        study,
        baseline=_baseline(request, configurations),
        include_synthetic=query_flag(request.GET, "synthetic", on="include"),
        include_learned=query_flag(request.GET, "learned", on="include"),
    )


def _baseline(request: HttpRequest, configurations) -> str:
    keys = [configuration.key for configuration in configurations]
    return query_choice(request.GET, "baseline", keys, default=rescoring.ORIGINAL)


def _with_progress(configurations) -> list[tuple]:
    return [(c, rescoring.configuration_progress(c)) for c in configurations]


def _csv_url(study: Study, result: rescoring.Comparison) -> str:
    query = f"baseline={result.baseline}"
    if result.include_synthetic:
        query += "&synthetic=include"
    if result.include_learned:
        query += "&learned=include"
    return f"{reverse('alignment:loop_comparison_csv', args=[study.pk])}?{query}"


@role_required(*STAFF)
def history(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    include_synthetic = query_flag(request.GET, "synthetic", on="include")
    data = jury_history.jury_history(study, include_synthetic=include_synthetic)
    chart = ""
    if data.scored:
        figure = jury_history.history_figure(data)
        chart = figures.inline_svg(figure, salt=f"jury-history-{study.pk}")
    context = {
        "study": study,
        "history": data,
        "chart": chart,
        "figures": jury_history.FIGURES,
        "note": jury_history.history_note(data),
        "formats": list(exports.EXPORT_FORMATS),
        "query": "?synthetic=include" if include_synthetic else "",
    }
    return render(request, "alignment/jury_history.html", context)


@role_required(*STAFF)
def history_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in exports.EXPORT_FORMATS:
        raise Http404("No such export format.")
    study = get_object_or_404(Study, pk=pk)
    data = jury_history.jury_history(
        study, include_synthetic=query_flag(request.GET, "synthetic", on="include")
    )
    return download_response(
        request,
        jury_history.history_export(data, fmt, study=study),
        filename=f"study-{study.pk}-jury-history.{fmt}",
        content_type=f"{exports.EXPORT_FORMATS[fmt][1]}; charset=utf-8",
        kind="table",
        target=study,
        synthetic=data.include_synthetic,
    )
