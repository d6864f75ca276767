"""Forms of the login page, of the People page, of each person's notification settings and of
their display preferences."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from accounts.models import NotificationKind, TextSize, Theme, User

SIGN_ON_REQUIRED = "sign_on_required"
EDITABLE = ("first_name", "last_name", "email", "role", "track", "licensed", "senior", "is_active")


class PersonForm(forms.ModelForm):
    """An account as an admin creates or changes it; the rules (a track for annotators only,
    senior only for licensed annotators, password strength) are the model's and the service's,
    shown under their fields."""

    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="At least 12 characters, not like the username or name, not a common "
        "password. Leave blank to keep the current one (a new account without one cannot log "
        "in until you set it).",
    )

    class Meta:
        model = User
        fields = ("username", *EDITABLE)
        labels = {"is_active": "Active", "senior": "Senior clinician"}
        help_texts = {
            "username": "How the person logs in.",
            "is_active": "An inactive account cannot log in; its reservations are released and "
            "its submitted work still counts.",
            "licensed": "Licensed clinicians annotate target studies; others practise in "
            "calibration rounds.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["username"].disabled = True

    def changes(self) -> dict:
        return {name: self.cleaned_data[name] for name in EDITABLE}

    def _post_clean(self) -> None:
        """The service runs the model's checks (after its own rules); the form only reads."""


class NotificationSettingsForm(forms.Form):
    wanted = forms.MultipleChoiceField(
        choices=NotificationKind.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Email me when",
    )

    def off(self) -> list[str]:
        wanted = set(self.cleaned_data["wanted"])
        return [kind for kind in NotificationKind.values if kind not in wanted]


class DisplayForm(forms.Form):
    """Theme and text size; a field left out of the post keeps its value."""

    theme = forms.ChoiceField(choices=Theme.choices, required=False)
    text_size = forms.ChoiceField(choices=TextSize.choices, required=False)


class PasswordLoginForm(AuthenticationForm):
    """Django's login form, refusing a password to the roles that must sign on instead
    (LOCAL_PASSWORD_ROLES)."""

    error_messages = AuthenticationForm.error_messages | {
        SIGN_ON_REQUIRED: "Your role signs in through your institution: use the sign-in button.",
    }

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if user.role not in settings.LOCAL_PASSWORD_ROLES:
            raise ValidationError(self.error_messages[SIGN_ON_REQUIRED], code=SIGN_ON_REQUIRED)
