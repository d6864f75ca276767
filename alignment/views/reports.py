"""Alignment reports (staff only): the study agreement report and its exports, per-rubric
figures, the disagreement report with themes, the precision planner and the calibration trend.
Every figure follows the counting rules of alignment.services.frames; the filters (model,
track, include synthetic) travel in the query string so each page and export is a link."""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from accounts.models import Track
from alignment.engine.agreement import (
    ADJACENT_AGREEMENT_DEFINITION,
    CHANCE_DEFINITION,
    EXACT_AGREEMENT_DEFINITION,
)
from alignment.engine.alt_test import ALIGNMENT, MIN_CLINICIANS, MIN_ITEMS
from alignment.engine.judges import ERROR_DEFINITION
from alignment.models import ItemTheme
from alignment.services import disagreements, exports, figures, themes, trend
from alignment.services.corrected import CORRECTED_METHOD
from alignment.services.drift import annotator_drift
from alignment.services.drift import drift_export as drift_text
from alignment.services.fidelity_comparison import fidelity_comparisons
from alignment.services.frames import EXCLUSION_REASONS, study_rubrics
from alignment.services.reports import (
    DEFAULT_TARGET_WIDTH,
    TARGET_WIDTHS,
    ReportFilters,
    StudyReport,
    planner_rows,
    study_report,
)
from alignment.services.rubric_figures import KINDS as FIGURE_KINDS
from alignment.services.rubric_figures import figure_salt, rubric_figure
from annotation.models import Project, Study, StudyItem
from audit.downloads import download_response
from common.query import (
    BadQuery,
    query_choice,
    query_flag,
    query_int,
    query_number,
    query_object,
)
from jury.engine.score_gaps import MAJOR_POINTS

TREND_KINDS = tuple(trend.CHART_TITLES)


def _filters(request: HttpRequest, project: Project) -> ReportFilters:
    return ReportFilters(
        model=query_choice(request.GET, "model", _model_labels(project)),
        track=query_choice(request.GET, "track", Track.values),
        include_synthetic=query_flag(request.GET, "synthetic", on="1"),
        include_learned=query_flag(request.GET, "learned", on="1"),
    )


def _model_labels(project: Project) -> list[str]:
    """The models of every study of the project: a filtered link between its studies (the
    trend, the disagreement report's rounds) may name a model one study lacks."""
    items = StudyItem.objects.filter(study__project=project)
    return sorted(set(items.values_list("conversation__run_agent__label", flat=True)))


def _query(filters: ReportFilters) -> str:
    """The filters as a query string for links between the pages ("" when none is set)."""
    parts = [("model", filters.model), ("track", filters.track)]
    parts.append(("synthetic", "1" if filters.include_synthetic else ""))
    parts.append(("learned", "1" if filters.include_learned else ""))
    text = urlencode([(k, v) for k, v in parts if v])
    return f"?{text}" if text else ""


def _study(pk: int) -> Study:
    return get_object_or_404(Study.objects.select_related("project"), pk=pk)


def _common(study: Study, report: StudyReport) -> dict:
    filters = report.filters
    return {
        "study": study,
        "report": report,
        "filters": filters,
        "query": _query(filters),
        "tracks": Track.choices,
        "exclusion_reasons": EXCLUSION_REASONS,
        "annotator_rows": report.annotators.to_dict("records"),
        "judge_error_definition": ERROR_DEFINITION,
        "definitions": {
            "adjacent": ADJACENT_AGREEMENT_DEFINITION,
            "exact": EXACT_AGREEMENT_DEFINITION,
            "chance": CHANCE_DEFINITION,
            "major": MAJOR_POINTS,
            "sample_question": exports.SAMPLE_QUESTION,
            "population_question": exports.POPULATION_QUESTION,
            "alt_alignment": ALIGNMENT,
            "alt_min_items": MIN_ITEMS,
            "alt_min_clinicians": MIN_CLINICIANS,
            "corrected_method": CORRECTED_METHOD,
        },
        "figure_labels": exports.FIGURE_LABELS,
        "study_tables": list(exports.STUDY_TABLES),
    }


def _target_width(request: HttpRequest) -> float:
    width = query_number(request.GET, "width", default=DEFAULT_TARGET_WIDTH)
    if width not in TARGET_WIDTHS:
        offered = ", ".join(f"{w:g}" for w in TARGET_WIDTHS)
        raise BadQuery("width", request.GET["width"], f"the planner offers widths {offered}.")
    return width


# --- index and study report --------------------------------------------------------------------


@role_required(*STAFF)
def index(request: HttpRequest) -> HttpResponse:
    projects = [
        {"project": project, "rounds": trend.project_rounds(project)}
        for project in Project.objects.prefetch_related("studies")
    ]
    return render(request, "alignment/index.html", {"projects": projects})


@role_required(*STAFF)
def report(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "alignment/report.html", _report_context(request, pk))


@role_required(*STAFF)
def planner(request: HttpRequest, pk: int) -> HttpResponse:
    """The precision planner alone: swapped in when the target width changes, and loaded into
    the study dashboard."""
    return render(request, "alignment/report.html#planner", _report_context(request, pk))


def _filtered_report(request: HttpRequest, study: Study):
    """The study's report under the filters of the request (as the page shows it)."""
    return study_report(study, _filters(request, study.project))


def _report_context(request: HttpRequest, pk: int) -> dict:
    study = _study(pk)
    data = _filtered_report(request, study)
    width = _target_width(request)
    return _common(study, data) | {
        "fidelity": fidelity_comparisons(data),
        "planner": planner_rows(data, width),
        "width": width,
        "widths": TARGET_WIDTHS,
    }


@role_required(*STAFF)
def export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in exports.EXPORT_FORMATS:
        raise Http404("No such export format.")
    study = _study(pk)
    report = _filtered_report(request, study)
    text = exports.agreement_export(report, fmt, study=study)
    return _table_download(request, study, text, name="agreement", fmt=fmt, report=report)


@role_required(*STAFF)
def table_export(request: HttpRequest, pk: int, table: str, fmt: str) -> HttpResponse:
    """The tables beyond the paper (population-weighted figures, alternative annotator test,
    clinician-corrected scores, judge bias, annotators) as CSV, Markdown or LaTeX."""
    if table not in exports.STUDY_TABLES or fmt not in exports.EXPORT_FORMATS:
        raise Http404("No such table or format.")
    study = _study(pk)
    report = _filtered_report(request, study)
    text = exports.study_table_export(report, table, fmt, study=study)
    return _table_download(request, study, text, name=table, fmt=fmt, report=report)


def _table_download(request, study, text: str, *, name: str, fmt: str, report) -> HttpResponse:
    """A table of the study's report, downloaded through the trail."""
    return download_response(
        request,
        text,
        filename=f"study-{study.pk}-{name}.{fmt}",
        content_type=f"{exports.EXPORT_FORMATS[fmt][1]}; charset=utf-8",
        kind="table",
        target=study,
        synthetic=bool(report.synthetic_ratings),
    )


@role_required(*STAFF)
def drift_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Each clinician over the project's rounds, with drift flags: loaded into the study report
    (every round's report is computed, so it comes after the page)."""
    study = _study(pk)
    filters = _filters(request, study.project)
    context = {
        "study": study,
        "query": _query(filters),
        "drift": annotator_drift(study, filters),
    }
    return render(request, "alignment/report.html#drift", context)


@role_required(*STAFF)
def drift_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    if fmt not in exports.EXPORT_FORMATS:
        raise Http404("No such export format.")
    study = _study(pk)
    data = annotator_drift(study, _filters(request, study.project))
    text = drift_text(data, exports.EXPORT_FORMATS[fmt][0], study=study)
    return download_response(
        request,
        text,
        filename=f"study-{pk}-drift.{fmt}",
        content_type=f"{exports.EXPORT_FORMATS[fmt][1]}; charset=utf-8",
        kind="table",
        target=study,
        synthetic=data.has_synthetic,
    )


# --- one rubric ----------------------------------------------------------------------------------


def _section(study: Study, data: StudyReport, rubric_id: str):
    section = data.section(rubric_id)
    if section is None:
        raise Http404("This study has no judged rubric of that name under these filters.")
    return section


@role_required(*STAFF)
def rubric(request: HttpRequest, pk: int, rubric_id: str) -> HttpResponse:
    study = _study(pk)
    data = _filtered_report(request, study)
    section = _section(study, data, rubric_id)
    charts = {}
    if not section.points.empty:
        page = reverse("alignment:disagreements", args=[study.pk])

        def link(item: int) -> str:
            return f"{page}?rubric={rubric_id}&limit=500#item-{item}-{rubric_id}"

        charts = {
            kind: figures.inline_svg(
                rubric_figure(study, section, kind, link=link), salt=figure_salt(section, kind)
            )
            for kind in FIGURE_KINDS
        }
    context = _common(study, data) | {
        "section": section,
        "charts": charts,
        "figure_kinds": FIGURE_KINDS,
        "formats": figures.FORMATS,
        "raters": data.raters,
    }
    return render(request, "alignment/rubric.html", context)


@role_required(*STAFF)
def figure(request: HttpRequest, pk: int, rubric_id: str, kind: str, fmt: str) -> HttpResponse:
    if kind not in FIGURE_KINDS or fmt not in figures.FORMATS:
        raise Http404("No such figure or format.")
    study = _study(pk)
    report = _filtered_report(request, study)
    section = _section(study, report, rubric_id)
    body = figures.render(rubric_figure(study, section, kind), fmt, salt=figure_salt(section, kind))
    return download_response(
        request,
        body,
        filename=f"study-{pk}-{rubric_id}-{kind}.{fmt}",
        content_type=figures.FORMATS[fmt],
        kind="figure",
        target=study,
        synthetic=bool(report.synthetic_ratings),
    )


# --- disagreements and themes ------------------------------------------------------------------


def _disagreement_query(request: HttpRequest, study: Study) -> disagreements.DisagreementQuery:
    params = request.GET
    theme = query_object(params, "theme", themes.project_themes(study))
    judged = [rubric.rubric_id for rubric in study_rubrics(study) if rubric.judged]
    return disagreements.DisagreementQuery(
        rubric=query_choice(params, "rubric", judged),
        min_diff=query_number(params, "min_diff", default=0.0, min_value=0, max_value=4),
        theme=theme.pk if theme else None,
        limit=query_int(
            params, "limit", default=disagreements.DEFAULT_LIMIT, min_value=1, max_value=500
        ),
    )


@role_required(*STAFF)
def disagreement_report(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    filters = _filters(request, study.project)
    query = _disagreement_query(request, study)
    page = disagreements.disagreement_page(study, filters, query)
    theme_rubrics, theme_rows = themes.theme_counts(study)
    names = {r.rubric_id: r.name for r in page.frames.rubrics}
    context = {
        "study": study,
        "filters": filters,
        "query": _query(filters),
        "tracks": Track.choices,
        "dq": query,
        "page": page,
        "rubrics": page.frames.judged_rubrics,
        "themes": themes.project_themes(study),
        "theme_rubrics": [names.get(r, r) for r in theme_rubrics],
        "theme_rows": theme_rows,
        "rounds": disagreements.majors_by_round(study.project, filters),
        "major": MAJOR_POINTS,
        "exclusion_reasons": EXCLUSION_REASONS,
        "models": sorted(set(page.frames.models.values())),
    }
    return render(request, "alignment/disagreements.html", context)


def _tag_cell(request: HttpRequest, item: StudyItem, rubric_id: str, error: str = ""):
    tags = themes.tags_by_key(item.study).get((item.conversation_id, rubric_id), [])
    context = {
        "study": item.study,
        "row": {"item": item, "rubric": {"rubric_id": rubric_id}, "tags": tags},
        "themes": themes.project_themes(item.study),
        "tag_error": error,
    }
    return render(request, "alignment/disagreements.html#theme-cell", context)


@role_required(*STAFF)
@require_POST
def tag(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    item = get_object_or_404(StudyItem.objects.select_related("study__project"), pk=item_pk)
    if item.study_id != pk:
        raise Http404("No such item in this study.")
    rubric_id = request.POST.get("rubric", "")
    theme_id = request.POST.get("theme", "")
    error = ""
    try:
        theme = themes.project_themes(item.study).filter(pk=theme_id).first() if theme_id else None
        themes.theme_tag(
            item=item,
            rubric_id=rubric_id,
            user=request.user,
            theme=theme,
            name=request.POST.get("name", ""),
            note=request.POST.get("note", ""),
        )
    except ValidationError as problem:
        error = " ".join(m for messages in problem.message_dict.values() for m in messages)
    if request.htmx:
        return _tag_cell(request, item, rubric_id, error)
    return redirect(_item_anchor(item, rubric_id))


@role_required(*STAFF)
@require_POST
def untag(request: HttpRequest, pk: int) -> HttpResponse:
    item_tag = get_object_or_404(ItemTheme.objects.select_related("item__study"), pk=pk)
    item, rubric_id = item_tag.item, item_tag.rubric_id
    themes.theme_untag(item_tag)
    if request.htmx:
        return _tag_cell(request, item, rubric_id)
    return redirect(_item_anchor(item, rubric_id))


def _item_anchor(item: StudyItem, rubric_id: str) -> str:
    url = reverse("alignment:disagreements", args=[item.study_id])
    return f"{url}#item-{item.conversation_id}-{rubric_id}"


# --- calibration trend ---------------------------------------------------------------------------


@role_required(*STAFF)
def trend_page(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    filters = _filters(request, project)
    data = trend.calibration_trend(project, filters)
    gaps = {kind: trend.chart_gap(data, kind) for kind in TREND_KINDS}
    charts = {
        kind: trend.trend_chart_svg(data, kind, salt=trend.chart_salt(kind))
        for kind in TREND_KINDS
        if not gaps[kind]
    }
    context = {
        "project": project,
        "trend": data,
        "rows": list(zip(data.rounds, data.reports, strict=True)),
        "annotator_cells": data.annotator_cells(),
        "models": sorted({m for report in data.reports for m in report.models}),
        "charts": charts,
        "gaps": list(dict.fromkeys(gap for gap in gaps.values() if gap)),  # each reason once
        "filters": filters,
        "query": _query(filters),
        "tracks": Track.choices,
        "formats": figures.FORMATS,
        "kinds": TREND_KINDS,
        "major": MAJOR_POINTS,
    }
    return render(request, "alignment/trend.html", context)


@role_required(*STAFF)
def trend_figure(request: HttpRequest, pk: int, kind: str, fmt: str) -> HttpResponse:
    if kind not in TREND_KINDS or fmt not in figures.FORMATS:
        raise Http404("No such figure or format.")
    project = get_object_or_404(Project, pk=pk)
    data = trend.calibration_trend(project, _filters(request, project))
    if gap := trend.chart_gap(data, kind):
        raise Http404(gap)
    body = figures.render(trend.trend_chart(data, kind), fmt, salt=trend.chart_salt(kind))
    return download_response(
        request,
        body,
        filename=f"project-{pk}-trend-{kind}.{fmt}",
        content_type=figures.FORMATS[fmt],
        kind="figure",
        target=project,
        synthetic=any(report.synthetic_ratings for report in data.reports),
    )
