"""Reads of study data are audited like writes: who opened which study's conversations,
reports and annotations. The pages are named here by URL name, with the URL argument that
names what was read; `ReadAuditMiddleware` adds one record per successful full-page GET of
one of them. Downloads are recorded by `audit.downloads` already, and htmx refreshes of a page
already opened are not new reads (a report polling its progress would flood the trail)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse

from audit.services import audit_read


@dataclass(frozen=True)
class ReadPage:
    what: str  # the audit action is "read.<what>"
    object_type: str  # the model label of what the URL argument names
    argument: str  # the URL argument holding its id


_STUDY = "annotation.Study"
_ASSIGNMENT = "annotation.Assignment"

READ_PAGES = {
    # Conversations as annotators, adjudicators and staff see them.
    "annotation:review": ReadPage("conversation", _ASSIGNMENT, "public_id"),
    "annotation:adjudication": ReadPage("conversation", "annotation.Adjudication", "public_id"),
    "annotation:staff_assignment": ReadPage("annotation", _ASSIGNMENT, "public_id"),
    "benchmark:conversation": ReadPage("conversation", "benchmark.Conversation", "public_id"),
    "api:conversation": ReadPage("conversation", "benchmark.Conversation", "public_id"),
    "api:conversations": ReadPage("conversations", "benchmark.Run", "run_id"),
    # Studies and their reports.
    "annotation:staff_study": ReadPage("study", _STUDY, "pk"),
    "annotation:staff_round_report": ReadPage("report", _STUDY, "pk"),
    "annotation:staff_adjudication": ReadPage("report", _STUDY, "pk"),
    "alignment:report": ReadPage("report", _STUDY, "pk"),
    "alignment:rubric": ReadPage("report", _STUDY, "pk"),
    "alignment:disagreements": ReadPage("report", _STUDY, "pk"),
    "alignment:drift": ReadPage("report", _STUDY, "pk"),
    "alignment:calibration": ReadPage("report", _STUDY, "pk"),
    "alignment:calibration_examples": ReadPage("report", _STUDY, "pk"),
    "alignment:jury_history": ReadPage("report", _STUDY, "pk"),
    "alignment:loop_comparison": ReadPage("report", _STUDY, "pk"),
    "api:study": ReadPage("study", _STUDY, "study_id"),
    "api:study_agreement": ReadPage("report", _STUDY, "study_id"),
}


class ReadAuditMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        page = _read_page(request, response)
        if page is not None:
            audit_read(
                actor=request.user,
                action=f"read.{page.what}",
                object_type=page.object_type,
                object_id=str(request.resolver_match.kwargs.get(page.argument, "")),
                path=request.path,
            )
        return response


def _read_page(request: HttpRequest, response: HttpResponse) -> ReadPage | None:
    match = getattr(request, "resolver_match", None)
    if match is None or request.method != "GET" or response.status_code != 200:
        return None
    if request.headers.get("HX-Request") == "true":
        return None
    if not getattr(getattr(request, "user", None), "is_authenticated", False):
        return None
    return READ_PAGES.get(match.view_name)
