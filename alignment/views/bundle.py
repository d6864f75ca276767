"""The static report button: a zip of the report bundle (alignment.services.bundle), written
in the request. Staff only: the bundle holds models, jury scores and clinicians' scores."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from alignment.forms.bundle import BundleForm
from alignment.services import bundle
from audit.downloads import download_response


@role_required(*STAFF)
@require_POST
def report_bundle(request: HttpRequest) -> HttpResponse:
    form = BundleForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("jury:leaderboard")
    jobs = list(form.cleaned_data["job"])
    too_big = bundle.too_big_for_a_request(jobs)
    if too_big:
        messages.error(request, too_big)
        return _back(jobs)
    try:
        body = bundle.report_bundle_zip(
            jobs, include_clinician_text=form.cleaned_data["clinician_text"]
        )
    except bundle.BundleError as error:
        messages.error(request, str(error))
        return _back(jobs)
    return download_response(
        request,
        body,
        filename=f"{bundle.bundle_name(jobs)}.zip",
        content_type="application/zip",
        kind="report_bundle",
        target=jobs[0],
    )


def _back(jobs) -> HttpResponse:
    """One job's button sits on its report; several jobs come from the leaderboard."""
    return redirect("jury:report", jobs[0].pk) if len(jobs) == 1 else redirect("jury:leaderboard")
