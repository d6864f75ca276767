"""Clinician studies, their annotations, agreement tables and study archives, as JSON."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import File, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from ninja.pagination import paginate

from alignment.forms.archive import ArchiveImportForm
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from alignment.services.archive import ArchiveError
from alignment.services.archive.jobs import archive_export_request, archive_import_request
from alignment.services.exports import (
    EXPORT_FORMATS,
    STUDY_TABLES,
    agreement_export,
    agreement_rows,
    study_table_export,
    synthetic_marked,
    usernames,
)
from alignment.services.reports import ReportFilters, study_report
from alignment.views.reports import _model_labels as model_labels
from annotation.forms.staff import StudyForm
from annotation.models import Study
from annotation.services import dashboard, exchange
from annotation.services.studies import study_create
from api.filters import AgreementFilters, StudyFilters, known_query
from api.forms import form_checked, form_refused
from api.frames import figures_tree, frame_rows, plain_tree
from api.pagination import RowsCursorPagination
from api.problems import Refused, responses
from api.schemas import (
    ArchiveExportIn,
    ArchiveJobOut,
    StudyIn,
    StudyOut,
)
from api.schemas_studies import AgreementOut, StudyDetailOut
from audit.downloads import download_response
from common.query import query_choice, query_flag

router = Router(tags=["studies"])


def study_out(study: Study) -> dict:
    return {
        "id": study.pk,
        "project": study.project.name,
        "name": study.name,
        "kind": study.kind,
        "round_number": study.round_number,
        "status": study.status,
        "sample_size": study.sample_size,
        "items": study.item_count,
        "scoring_jobs": [job.pk for job in study.scoring_jobs.all()],
        "created_at": study.created_at,
    }


def studies_out(page: list[Study]) -> list[dict]:
    return [study_out(study) for study in page]


def _studies():
    """Studies with what a row shows read with them (a list costs the same for any page)."""
    found = Study.objects.select_related("project").prefetch_related("scoring_jobs")
    return found.annotate(item_count=Count("items", distinct=True))


def archive_job_out(job: ArchiveJob) -> dict:
    return {
        "id": job.pk,
        "kind": job.kind,
        "study": job.study_id,
        "status": job.status,
        "done": job.done,
        "total": job.total,
        "error": job.error,
        "file_name": job.file_name,
        "downloadable": job.downloadable,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
    }


# --- studies ---------------------------------------------------------------------------------


@router.post("/studies", response=responses({201: StudyOut}, 400), url_name="study_create")
def study_new(request: HttpRequest, payload: StudyIn):
    """Create a study and draw its sample (the new study page's form and checks)."""
    form = form_checked(StudyForm, payload.dict())
    try:
        study = study_create(
            spec=form.spec(),
            scoring_jobs=list(form.cleaned_data["scoring_jobs"]),
            rubric_versions=list(form.cleaned_data["rubric_versions"]),
            created_by=request.user,
        )
    except ValidationError as error:
        form.add_service_errors(error.message_dict)
        raise form_refused(form) from None
    return Status(201, study_out(_study(study.pk)))


@router.get("/studies", response=responses({200: list[StudyOut]}, 400), url_name="studies")
@paginate(RowsCursorPagination, out=studies_out)
@known_query(StudyFilters)
def study_list(request: HttpRequest, filters: Query[StudyFilters]):
    """Studies, oldest first; `status` and `kind` narrow the list."""
    found = _studies()
    if filters.status:
        found = found.filter(status=filters.status)
    if filters.kind:
        found = found.filter(kind=filters.kind)
    return found


@router.get("/studies/{study_id}", response=responses({200: StudyDetailOut}, 404), url_name="study")
def study_detail(request: HttpRequest, study_id: int):
    """The study and its live progress: per annotator, per track, items short of overlap."""
    study = _study(study_id)
    return study_out(study) | {"progress": plain_tree(dashboard.study_progress(study))}


@router.get(
    "/studies/{study_id}/annotations.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_annotations",
)
def study_annotations(request: HttpRequest, study_id: int, fmt: str):
    """The annotation export of the study page (CSV, JSONL or Parquet; `pseudonymise=1`)."""
    if fmt not in exchange.EXPORT_FORMATS:
        raise HttpError(404, f"Export formats: {', '.join(exchange.EXPORT_FORMATS)}.")
    study = _study(study_id)
    pseudonymise = query_flag(request.GET, "pseudonymise", on="1")
    content, content_type = exchange.export_file(study, fmt, pseudonymise=pseudonymise)
    suffix = "-pseudonymised" if pseudonymise else ""
    return download_response(
        request,
        content,
        filename=f"study-{study_id}-annotations{suffix}.{fmt}",
        content_type=content_type,
        kind="annotations",
        target=study,
        synthetic=exchange.has_synthetic_work(study),
    )


@router.get(
    "/studies/{study_id}/agreement",
    response=responses({200: AgreementOut}, 400, 404),
    url_name="study_agreement",
)
@known_query(AgreementFilters)
def study_agreement(request: HttpRequest, study_id: int, filters: Query[AgreementFilters]):
    """Every agreement figure of every rubric with its 95% bootstrap interval and counts, on the
    sample and (when the study has a design) population-weighted; the paper's table beside it.
    Filters as on the report page: `model`, `track`, `synthetic`, `learned`."""
    study = _study(study_id)
    report = study_report(study, _report_filters(request, study, filters))
    return {
        "study": study.pk,
        "filters": plain_tree(report.filters),
        "resamples": report.resamples,
        "conversations": report.n_items,
        "ratings": report.n_ratings,
        "excluded": report.excluded,
        "synthetic_ratings": report.synthetic_ratings,  # synthetic clinicians' ratings counted
        "design": {"source": report.design_source, "missing_because": report.design_reason},
        "table": frame_rows(synthetic_marked(agreement_rows(report), report, usernames(report))),
        "rubrics": [
            {
                "rubric": figures_tree(section.rubric),
                "sample": figures_tree(section.agreement),
                "population_weighted": figures_tree(section.weighted),
                "judges": figures_tree(section.judges),
                "judges_missing_because": section.judges_reason,
            }
            for section in report.sections
        ],
        "realism": [
            {
                "rubric": figures_tree(section.rubric),
                "summary": plain_tree(section.summary),
                "sample": figures_tree(section.agreement),
                "population_weighted": figures_tree(section.weighted),
            }
            for section in report.realism
        ],
    }


@router.get(
    "/studies/{study_id}/tables/{table}.{fmt}",
    response=responses({200: None}, 400, 404),
    url_name="study_table",
)
@known_query(AgreementFilters)
def study_table(
    request: HttpRequest, study_id: int, table: str, fmt: str, filters: Query[AgreementFilters]
):
    """A table of the study's report as its file (`fmt` csv, md or tex): `agreement` (the
    paper's table) or one beyond it (weighted, alt-test, corrected, bias, annotators...), under
    the agreement's filters."""
    tables = ("agreement", *STUDY_TABLES)
    if table not in tables or fmt not in EXPORT_FORMATS:
        raise HttpError(404, f"Tables: {', '.join(tables)}; formats: {', '.join(EXPORT_FORMATS)}.")
    study = _study(study_id)
    report = study_report(study, _report_filters(request, study, filters))
    if table == "agreement":
        text = agreement_export(report, fmt, study=study)
    else:
        text = study_table_export(report, table, fmt, study=study)
    return download_response(
        request,
        text,
        filename=f"study-{study.pk}-{table}.{fmt}",
        content_type=f"{EXPORT_FORMATS[fmt][1]}; charset=utf-8",
        kind="table",
        target=study,
        synthetic=bool(report.synthetic_ratings),
    )


def _report_filters(request: HttpRequest, study: Study, filters: AgreementFilters):
    """The report page's filters; a model must be one of the project's (a 400 naming them)."""
    return ReportFilters(
        model=query_choice(request.GET, "model", model_labels(study.project)),
        track=filters.track or "",
        include_synthetic=filters.synthetic,
        include_learned=filters.learned,
    )


def _study(study_id: int) -> Study:
    return get_object_or_404(_studies(), pk=study_id)


# --- study archives --------------------------------------------------------------------------


@router.post(
    "/archives/exports",
    response=responses({201: ArchiveJobOut}, 400, 404),
    url_name="archive_export",
)
def archive_export(request: HttpRequest, payload: ArchiveExportIn):
    """Export a study archive in the background; poll the job, then download it."""
    study = _study(payload.study)
    job = archive_export_request(study, user=request.user, with_usernames=payload.with_usernames)
    return Status(201, archive_job_out(job))


@router.post(
    "/archives/imports", response=responses({201: ArchiveJobOut}, 400), url_name="archive_import"
)
def archive_import(request: HttpRequest, file: File[UploadedFile]):
    """Import a study archive (a zip, multipart field `file`) in the background."""
    form = ArchiveImportForm(files={"file": file})
    if not form.is_valid():
        raise form_refused(form, location="form")
    try:
        job = archive_import_request(form.cleaned_data["file"], user=request.user)
    except ArchiveError as error:
        raise Refused(f"{file.name}: {error}") from None
    return Status(201, archive_job_out(job))


@router.get(
    "/archives/{job_id}", response=responses({200: ArchiveJobOut}, 404), url_name="archive_job"
)
def archive_job(request: HttpRequest, job_id: int):
    return archive_job_out(get_object_or_404(ArchiveJob, pk=job_id))


@router.get(
    "/archives/{job_id}/download",
    response=responses({200: None}, 404),
    url_name="archive_download",
)
def archive_download(request: HttpRequest, job_id: int):
    """The finished export's zip (offered for ARCHIVE_DOWNLOAD_HOURS)."""
    job = get_object_or_404(
        ArchiveJob, pk=job_id, kind=ArchiveJobKind.EXPORT, status=ArchiveJobStatus.FINISHED
    )
    path = Path(job.file_path)
    if not job.downloadable or not path.is_file():
        raise HttpError(
            404, "The archive file is no longer on this server; export the study again."
        )
    return download_response(
        request,
        path.open("rb"),
        filename=job.file_name,
        content_type="application/zip",
        kind="archive",
        target=job.study,
    )
