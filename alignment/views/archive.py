"""Researcher pages of the study archive: the export button, the job page with its progress
and download (a static report bundle's too: alignment.views.bundle), and the import upload.
Staff only: an archive holds models, jury scores and who scored what."""

from __future__ import annotations

from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from alignment.forms.archive import ArchiveExportForm, ArchiveImportForm
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from alignment.services.archive import ArchiveError
from alignment.services.archive.jobs import archive_export_request, archive_import_request
from annotation.models import Study
from audit.downloads import download_response


@role_required(*STAFF)
@require_POST
def study_archive(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    form = ArchiveExportForm(request.POST)
    with_usernames = form.is_valid() and form.cleaned_data["with_usernames"]
    job = archive_export_request(study, user=request.user, with_usernames=with_usernames)
    return redirect("alignment:archive_job", job.pk)


@role_required(*STAFF)
def archive_job(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(ArchiveJob.objects.select_related("study__project"), pk=pk)
    context = {"job": job}
    if request.htmx:
        return render(request, "alignment/archive_job.html#archive-progress", context)
    return render(request, "alignment/archive_job.html", context)


@role_required(*STAFF)
def archive_download(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(
        ArchiveJob.objects.exclude(kind=ArchiveJobKind.IMPORT),
        pk=pk,
        status=ArchiveJobStatus.FINISHED,
    )
    path = Path(job.file_path)
    if not job.downloadable or not path.is_file():
        raise Http404("The file is no longer on this server; write it again.")
    bundle = job.kind == ArchiveJobKind.BUNDLE
    return download_response(
        request,
        path.open("rb"),
        filename=job.file_name,
        content_type="application/zip",
        kind="report_bundle" if bundle else "archive",
        target=job.scoring_jobs.order_by("pk").first() if bundle else job.study,
    )


@role_required(*STAFF)
def archive_import(request: HttpRequest) -> HttpResponse:
    form = ArchiveImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = archive_import_request(form.cleaned_data["file"], user=request.user)
        except ArchiveError as error:
            form.add_error("file", f"{form.cleaned_data['file'].name}: {error}")
        else:
            return redirect("alignment:archive_job", job.pk)
    jobs = ArchiveJob.objects.select_related("study").filter(kind=ArchiveJobKind.IMPORT)[:20]
    return render(request, "alignment/archive_import.html", {"form": form, "jobs": jobs})
