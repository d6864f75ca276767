"""What a researcher shares: the leaderboard across runs (each entry verified or custom, with
the reasons) and the static report bundle (a worker job writes it as a zip; poll it, then
download it). The leaderboard page's and the report button's services and form."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from alignment.forms.bundle import BundleForm
from alignment.models import ArchiveJob, ArchiveJobKind, ArchiveJobStatus
from alignment.services.archive.jobs import report_bundle_request
from api.forms import form_refused
from api.problems import Refused, responses
from api.routes.studies import archive_job_out
from api.schemas import ArchiveJobOut, Interval
from audit.downloads import download_response
from jury.services import leaderboard

router = Router(tags=["sharing"])


class LeaderboardEntryOut(Schema):
    model: str
    job: int = Field(description="The scoring job the figure comes from")
    run: str
    jury: str
    judges: list[str] = Field(description="The jury's judge models")
    aggregate: Interval = Field(description="The aggregate's mean and 95% interval")
    n: int = Field(description="Complete conversations")
    label: Literal["verified", "custom"] = Field(
        description="verified: run here from the shipped data with an unmodified manifest"
    )
    reasons: list[str] = Field(description="Why the entry is custom (empty when verified)")


class LeaderboardOut(Schema):
    jobs: int = Field(description="Scoring jobs looked at (the newest finished whole-run ones)")
    entries: list[LeaderboardEntryOut] = Field(description="Best aggregate first")


class ReportBundleIn(Schema):
    scoring_jobs: list[int] = Field(description="Scoring job ids (several: with a leaderboard)")
    clinician_text: bool = Field(
        False, description="Include clinicians' written feedback (never their names)"
    )


class ReportBundleOut(ArchiveJobOut):
    scoring_jobs: list[int]
    clinician_text: bool


@router.get("/leaderboard", response=responses({200: LeaderboardOut}), url_name="leaderboard")
def leaderboard_table(request: HttpRequest):
    """The leaderboard page's entries: one per model and scoring job, with the aggregate's
    interval and "verified" or "custom" (the reasons say what differs from the shipped data)."""
    jobs = leaderboard.leaderboard_jobs()
    entries = [_entry_out(entry) for entry in leaderboard.leaderboard_entries(jobs)]
    return {"jobs": len(jobs), "entries": entries}


def _entry_out(entry: dict) -> dict:
    aggregate = {"estimate": entry["mean"], "low": entry["low"], "high": entry["high"]}
    fields = ("model", "job", "run", "jury", "judges", "n", "label", "reasons")
    return {name: entry[name] for name in fields} | {"aggregate": aggregate}


@router.post(
    "/report-bundles", response=responses({201: ReportBundleOut}, 400), url_name="report_bundle"
)
def report_bundle_new(request: HttpRequest, payload: ReportBundleIn):
    """Write the static report of one or several scoring jobs in the background (the report
    button's job): poll it, then download the zip."""
    form = BundleForm(data={"job": payload.scoring_jobs, "clinician_text": payload.clinician_text})
    if not form.is_valid():
        raise _named_as_in_the_body(form_refused(form))
    job = report_bundle_request(
        list(form.cleaned_data["job"]),
        user=request.user,
        clinician_text=form.cleaned_data["clinician_text"],
    )
    return Status(201, _bundle_out(_bundle(job.pk)))


@router.get(
    "/report-bundles/{job_id}",
    response=responses({200: ReportBundleOut}, 404),
    url_name="report_bundle_job",
)
def report_bundle_job(request: HttpRequest, job_id: int):
    """The bundle's progress (`done` of `total` steps), then whether it can be downloaded."""
    return _bundle_out(_bundle(job_id))


@router.get(
    "/report-bundles/{job_id}/download",
    response=responses({200: None}, 404),
    url_name="report_bundle_download",
)
def report_bundle_download(request: HttpRequest, job_id: int):
    """The finished bundle's zip: unzip it and open index.html (offered for
    ARCHIVE_DOWNLOAD_HOURS)."""
    job = _bundle(job_id)
    path = Path(job.file_path)
    if job.status != ArchiveJobStatus.FINISHED:
        raise HttpError(404, f"The bundle is not written yet ({job.get_status_display()}).")
    if not job.downloadable or not path.is_file():
        raise HttpError(404, "The bundle is no longer on this server; write it again.")
    return download_response(
        request,
        path.open("rb"),
        filename=job.file_name,
        content_type="application/zip",
        kind="report_bundle",
        target=job.scoring_jobs.order_by("pk").first(),
    )


def _bundle(job_id: int) -> ArchiveJob:
    bundles = ArchiveJob.objects.filter(kind=ArchiveJobKind.BUNDLE).prefetch_related("scoring_jobs")
    return get_object_or_404(bundles, pk=job_id)


def _bundle_out(job: ArchiveJob) -> dict:
    return archive_job_out(job) | {
        "scoring_jobs": sorted(scoring_job.pk for scoring_job in job.scoring_jobs.all()),
        "clinician_text": job.clinician_text,
    }


def _named_as_in_the_body(refused: Refused) -> Refused:
    """The form calls the jobs `job`; the body calls them `scoring_jobs`."""
    for error in refused.errors:
        error["location"] = error["location"].replace("body.job", "body.scoring_jobs")
    return Refused(refused.detail.replace("job: ", "scoring_jobs: "), refused.errors)
