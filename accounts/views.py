from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import ADMIN_ONLY, EVERYONE, role_required
from accounts.models import Role, User


@role_required(*EVERYONE)
def home(request: HttpRequest) -> HttpResponse:
    if request.user.has_role(Role.ANNOTATOR):
        from annotation.services.worklist import annotator_studies

        studies = annotator_studies(request.user)
        return render(request, "accounts/home_annotator.html", {"studies": studies})
    from benchmark.services.dashboard import dashboard_summary
    from jury.models import ScoringJob

    jobs = ScoringJob.objects.select_related("run", "jury")[:5]
    return render(
        request, "accounts/home_staff.html", {"summary": dashboard_summary(), "jobs": jobs}
    )


@role_required(*ADMIN_ONLY)
def people(request: HttpRequest) -> HttpResponse:
    users = User.objects.order_by("role", "username")
    return render(request, "accounts/people.html", {"people": users})
