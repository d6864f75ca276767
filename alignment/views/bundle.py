"""The static report button: a worker job writes the report bundle (alignment.services.bundle)
as a zip; its page (alignment:archive_job) shows the progress, then the download. Staff only:
the bundle holds models, jury scores and clinicians' scores."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from alignment.forms.bundle import BundleForm
from alignment.services.archive.jobs import report_bundle_request


@role_required(*STAFF)
@require_POST
def report_bundle(request: HttpRequest) -> HttpResponse:
    form = BundleForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("jury:leaderboard")
    job = report_bundle_request(
        list(form.cleaned_data["job"]),
        user=request.user,
        clinician_text=form.cleaned_data["clinician_text"],
    )
    return redirect("alignment:archive_job", job.pk)
