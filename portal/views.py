"""The home page: what each role has to do next, drawn from the apps below."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import EVERYONE, role_required
from accounts.models import Role
from annotation.services.adjudication import adjudication_queue
from annotation.services.worklist import annotator_studies
from benchmark.services.dashboard import dashboard_summary
from jury.models import ScoringJob


@role_required(*EVERYONE)
def home(request: HttpRequest) -> HttpResponse:
    if request.user.has_role(Role.ANNOTATOR):
        studies = annotator_studies(request.user)
        waiting = len(adjudication_queue(request.user)) if request.user.senior else None
        return render(
            request,
            "portal/home_annotator.html",
            {"studies": studies, "adjudications_waiting": waiting},
        )
    jobs = ScoringJob.objects.select_related("run", "jury")[:5]
    return render(request, "portal/home_staff.html", {"summary": dashboard_summary(), "jobs": jobs})
