from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.access import ADMIN_ONLY, EVERYONE, role_required
from accounts.forms import DisplayForm
from accounts.middleware import ENDED
from accounts.models import AccountOrigin, Role, User
from accounts.services import display_preferences_set
from config.query import query_flag


class LoginPage(auth_views.LoginView):
    """Django's login, saying so when the person arrives because their session ended."""

    def get_context_data(self, **kwargs) -> dict:
        name, value = ENDED
        ended = query_flag(self.request.GET, name, on=value)
        return super().get_context_data(**kwargs) | {"session_ended": ended}


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


@role_required(*EVERYONE)
@require_POST
def display_preferences(request: HttpRequest) -> HttpResponse:
    """Theme and text size, kept on the account. The page's script applies a change at once and
    posts it with `fetch` (answered 204); without the script the form posts and comes back."""
    form = DisplayForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("Choose a theme and a text size the site offers.")
    display_preferences_set(user=request.user, **form.cleaned_data)
    if request.headers.get("X-Requested-With") == "fetch":
        return HttpResponse(status=204)
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure())
    return redirect(back if safe else "home")


@role_required(*EVERYONE)
@require_POST
def session_keepalive(request: HttpRequest) -> HttpResponse:
    """The review screen's *Stay logged in*: any request restarts the idle wait, and this one
    does nothing else (the answer's X-Session-Expires-In says how long is left)."""
    return HttpResponse(status=204)
