from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import ADMIN_ONLY, EVERYONE, role_required
from accounts.models import AccountOrigin, Role, User


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
    """The site's people; the accounts imports created (records of who did imported work,
    possibly hundreds of pseudonyms) folded apart with their count."""
    users = User.objects.order_by("role", "username")
    return render(
        request,
        "accounts/people.html",
        {
            "people": users.filter(origin=AccountOrigin.SITE),
            "imported": users.exclude(origin=AccountOrigin.SITE).order_by("origin", "username"),
        },
    )
