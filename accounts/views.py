from allauth.account.internal.flows.login import perform_password_login
from allauth.account.models import Login
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.access import ADMIN_ONLY, EVERYONE, role_required
from accounts.forms import (
    SIGN_ON_REQUIRED,
    DisplayForm,
    NotificationSettingsForm,
    PasswordLoginForm,
    PersonForm,
)
from accounts.middleware import ENDED, IDLE, SESSION
from accounts.models import AccountOrigin, NotificationKind, Role, User
from accounts.services import display_preferences_set, notification_settings_save, person_save
from accounts.sso import provider_logout_url, sign_on_button, signed_on
from common.query import query_choice


class LoginPage(auth_views.LoginView):
    """Django's login, saying so, and why, when the person arrives because their session
    ended; with the institution's sign-on button when it is configured. A right password goes
    on through allauth's login stages, which ask for the second factor of those who have one."""

    authentication_form = PasswordLoginForm

    def get_context_data(self, **kwargs) -> dict:
        reason = query_choice(self.request.GET, SESSION, [IDLE, ENDED])
        context = super().get_context_data(**kwargs)
        return context | {
            "session_ended": reason,
            "sign_on": sign_on_button(),
            "sign_on_required": context["form"].has_error(NON_FIELD_ERRORS, SIGN_ON_REQUIRED),
        }

    def form_valid(self, form) -> HttpResponse:
        # allauth's password login (an internal module, pinned to 65.x in pyproject.toml): it
        # records the password as this session's authentication, which its pages that need a
        # recent login (setting up an authenticator app) check, then runs its login stages.
        login = Login(user=form.get_user(), redirect_url=self.get_success_url())
        credentials = {"username": form.cleaned_data["username"]}
        return perform_password_login(self.request, credentials, login)


class LogoutPage(auth_views.LogoutView):
    """Django's logout; after a sign-on, it goes on to the provider's logout (RP-initiated
    logout), which ends the provider's session too and comes back to the login page."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        provider_exit = provider_logout_url(request) if signed_on(request) else None
        response = super().post(request, *args, **kwargs)
        return redirect(provider_exit) if provider_exit else response


@role_required(*ADMIN_ONLY)
def people(request: HttpRequest) -> HttpResponse:
    """The site's people, each with a link to change them; the accounts imports created
    (records of who did imported work, possibly hundreds of pseudonyms) folded apart with
    their count."""
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


@role_required(*ADMIN_ONLY)
def person_new(request: HttpRequest) -> HttpResponse:
    return _person_form(request, User(role=Role.ANNOTATOR))


@role_required(*ADMIN_ONLY)
def person_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _person_form(request, get_object_or_404(User, pk=pk, origin=AccountOrigin.SITE))


def _person_form(request: HttpRequest, person: User) -> HttpResponse:
    creating = person.pk is None
    form = PersonForm(request.POST or None, instance=person)
    if request.method == "POST" and form.is_valid():
        if creating:
            person.username = form.cleaned_data["username"]
        try:
            person_save(
                person,
                changes=form.changes(),
                password=form.cleaned_data["password"],
                actor=request.user,
                creating=creating,
            )
        except ValidationError as error:
            _add_errors(form, error)
        else:
            done = "Created" if creating else "Saved"
            messages.success(request, f"{done} {person.username}.")
            return redirect("people")
    return render(
        request, "accounts/person_form.html", {"form": form, "person": person, "creating": creating}
    )


def _add_errors(form, error: ValidationError) -> None:
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for field, texts in error.message_dict.items():
        form.add_error(field if field in form.fields else None, texts)


@role_required(*EVERYONE)
def notification_settings(request: HttpRequest) -> HttpResponse:
    """Each person chooses which notifications they get by email."""
    person = request.user
    wanted = [kind for kind in NotificationKind.values if person.wants(kind)]
    form = NotificationSettingsForm(request.POST or None, initial={"wanted": wanted})
    if request.method == "POST" and form.is_valid():
        notification_settings_save(person, off=form.off())
        messages.success(request, "Saved: you get the notifications ticked below.")
        return redirect("notification_settings")
    return render(
        request, "accounts/notification_settings.html", {"form": form, "email": person.email}
    )
