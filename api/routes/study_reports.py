"""The files of a study's report beyond its tables (`studies.py` serves those): every figure of
every judged rubric, the annotators' drift over the project's rounds, the project's calibration
trend, and a list of every file the report offers. Each file is the one the report page
downloads, drawn by the same service, under the same filters (`model`, `track`, `synthetic`,
`learned`), through the audit trail."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from pydantic import Field

from alignment.services import exports, jury_history, rescoring, rubric_figures, trend
from alignment.services.drift import annotator_drift, drift_export
from alignment.services.frames import study_rubrics
from alignment.services.reports import ReportFilters, study_report
from alignment.views.reports import _model_labels as model_labels
from annotation.models import Project, Study
from annotation.services import exchange
from api.files import figure_file, offered, table_file
from api.filters import AgreementFilters, known_query
from api.problems import responses
from common.figures import FORMATS as FIGURE_FORMATS
from common.query import query_choice

router = Router(tags=["study reports"])
API = "/api/v1"


class StudyReportFileOut(Schema):
    kind: Literal["figure", "table", "export"]
    name: str = Field(description="The figure's or table's name, e.g. scatter, alt-test")
    rubric: str | None = Field(description="The rubric of a per-rubric figure")
    paths: list[str] = Field(description="One address per format (add the filters to each)")


class StudyReportFilesOut(Schema):
    study: int
    project: int
    files: list[StudyReportFileOut]


class JuryHistoryFilters(Schema):
    synthetic: bool = Field(False, description="Count synthetic clinicians' ratings too")


class JuryComparisonFilters(Schema):
    baseline: str | None = Field(
        None, description="The configuration the others are compared with (default: original)"
    )
    synthetic: bool = Field(False, description="Count synthetic clinicians' ratings too")
    learned: bool = Field(False, description="Count learned (simulated) ratings too")


def report_filters(request: HttpRequest, project: Project, filters: AgreementFilters):
    """The report page's filters; a model must be one of the project's (a 400 naming them)."""
    return ReportFilters(
        model=query_choice(request.GET, "model", model_labels(project)),
        track=filters.track or "",
        include_synthetic=filters.synthetic,
        include_learned=filters.learned,
    )


def _study(study_id: int) -> Study:
    return get_object_or_404(Study.objects.select_related("project"), pk=study_id)


def _file(kind: str, name: str, paths: list[str], rubric: str | None = None) -> dict:
    return {"kind": kind, "name": name, "rubric": rubric, "paths": paths}


@router.get(
    "/studies/{study_id}/files",
    response=responses({200: StudyReportFilesOut}, 404),
    url_name="study_report_files",
)
def study_report_files(request: HttpRequest, study_id: int):
    """Every file the study's report offers, by address: the agreement table and the tables
    beyond it, the drift table, each judged rubric's figures, the project's trend figures and
    the annotation export. The filters go on each address as on the page's links."""
    study = _study(study_id)
    base, figure_formats = f"{API}/studies/{study.pk}", list(FIGURE_FORMATS)
    files = [
        _file("table", table, [f"{base}/tables/{table}.{fmt}" for fmt in exports.EXPORT_FORMATS])
        for table in ("agreement", *exports.STUDY_TABLES)
    ]
    files.append(_file("table", "drift", [f"{base}/drift.{fmt}" for fmt in exports.EXPORT_FORMATS]))
    files += [
        _file(
            "figure",
            kind,
            [f"{base}/figures/{rubric.rubric_id}/{kind}.{fmt}" for fmt in figure_formats],
            rubric.rubric_id,
        )
        for rubric in study_rubrics(study)
        if rubric.judged
        for kind in rubric_figures.KINDS
    ]
    trend_base = f"{API}/projects/{study.project_id}/trend"
    files += [
        _file("figure", f"trend-{kind}", [f"{trend_base}/{kind}.{fmt}" for fmt in figure_formats])
        for kind in trend.CHART_TITLES
    ]
    history = [f"{base}/jury-history.{fmt}" for fmt in exports.EXPORT_FORMATS]
    files += [
        _file("table", "jury-history", history),
        _file("table", "juries", [f"{base}/juries.csv"]),
    ]
    annotations = [f"{base}/annotations.{fmt}" for fmt in exchange.EXPORT_FORMATS]
    files.append(_file("export", "annotations", annotations))
    return {"study": study.pk, "project": study.project_id, "files": files}


@router.get(
    "/studies/{study_id}/figures/{rubric_id}/{kind}.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_figure",
)
@known_query(AgreementFilters)
def study_figure(
    request: HttpRequest,
    study_id: int,
    rubric_id: str,
    kind: str,
    fmt: str,
    filters: Query[AgreementFilters],
):
    """A figure of one judged rubric as the rubric page offers it: `kind` scatter (jury
    against the clinicians' mean), bias (Bland-Altman) or confusion; `fmt` svg, png (300 dpi)
    or pdf; under the agreement's filters."""
    offered(kind, rubric_figures.KINDS, fmt, FIGURE_FORMATS, "Figures")
    study = _study(study_id)
    report = study_report(study, report_filters(request, study.project, filters))
    section = report.section(rubric_id)
    if section is None:
        raise HttpError(404, "This study has no judged rubric of that name under these filters.")
    return figure_file(
        request,
        rubric_figures.rubric_figure(study, section, kind),
        fmt,
        salt=rubric_figures.figure_salt(section, kind),
        filename=f"study-{study.pk}-{rubric_id}-{kind}.{fmt}",
        target=study,
        synthetic=bool(report.synthetic_ratings),
    )


@router.get(
    "/studies/{study_id}/drift.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_drift_table",
)
@known_query(AgreementFilters)
def study_drift_table(
    request: HttpRequest, study_id: int, fmt: str, filters: Query[AgreementFilters]
):
    """Each clinician over the project's rounds (agreement, bias, drift flags) as CSV,
    Markdown (md) or LaTeX (tex), as the report page exports it."""
    offered("drift", ["drift"], fmt, exports.EXPORT_FORMATS, "Tables")
    study = _study(study_id)
    drift = annotator_drift(study, report_filters(request, study.project, filters))
    return table_file(
        request,
        drift_export(drift, exports.EXPORT_FORMATS[fmt][0], study=study),
        exports.EXPORT_FORMATS[fmt][1],
        filename=f"study-{study.pk}-drift.{fmt}",
        target=study,
        synthetic=drift.has_synthetic,
    )


@router.get(
    "/projects/{project_id}/trend/{kind}.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="project_trend_figure",
)
@known_query(AgreementFilters)
def project_trend_figure(
    request: HttpRequest, project_id: int, kind: str, fmt: str, filters: Query[AgreementFilters]
):
    """The project's calibration trend over its rounds as the trend page offers it: `kind`
    rubrics or annotators; 404 saying why when it has nothing to plot yet."""
    offered(kind, trend.CHART_TITLES, fmt, FIGURE_FORMATS, "Figures")
    project = get_object_or_404(Project, pk=project_id)
    data = trend.calibration_trend(project, report_filters(request, project, filters))
    if gap := trend.chart_gap(data, kind):
        raise HttpError(404, gap)
    return figure_file(
        request,
        trend.trend_chart(data, kind),
        fmt,
        salt=trend.chart_salt(kind),
        filename=f"project-{project.pk}-trend-{kind}.{fmt}",
        target=project,
        synthetic=any(report.synthetic_ratings for report in data.reports),
    )


@router.get(
    "/studies/{study_id}/jury-history.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_jury_history_table",
)
@known_query(JuryHistoryFilters)
def study_jury_history_table(
    request: HttpRequest, study_id: int, fmt: str, filters: Query[JuryHistoryFilters]
):
    """Agreement with the study's clinicians per version of its jury (the jury history page's
    table) as CSV, Markdown (md) or LaTeX (tex)."""
    offered("jury-history", ["jury-history"], fmt, exports.EXPORT_FORMATS, "Tables")
    study = _study(study_id)
    data = jury_history.jury_history(study, include_synthetic=filters.synthetic)
    return table_file(
        request,
        jury_history.history_export(data, fmt, study=study),
        exports.EXPORT_FORMATS[fmt][1],
        filename=f"study-{study.pk}-jury-history.{fmt}",
        target=study,
        synthetic=data.include_synthetic,
    )


@router.get(
    "/studies/{study_id}/juries.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_jury_comparison_table",
)
@known_query(JuryComparisonFilters)
def study_jury_comparison_table(
    request: HttpRequest, study_id: int, fmt: str, filters: Query[JuryComparisonFilters]
):
    """Every jury configuration scored on the study against the clinicians and against the
    `baseline` (the re-scoring comparison page's CSV); a baseline the study lacks is a 400
    naming those it has. CSV only, as on the page."""
    offered("juries", ["juries"], fmt, ["csv"], "Tables")
    study = _study(study_id)
    configurations = rescoring.study_configurations(study)
    keys = [configuration.key for configuration in configurations]
    comparison = rescoring.jury_comparison(
        study,
        baseline=query_choice(request.GET, "baseline", keys, default=rescoring.ORIGINAL),
        include_synthetic=filters.synthetic,
        include_learned=filters.learned,
    )
    return table_file(
        request,
        rescoring.comparison_csv(comparison),
        "text/csv",
        filename=f"study-{study.pk}-juries.csv",
        target=study,
    )
