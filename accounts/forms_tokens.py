"""The form that makes a personal access token."""

from django import forms
from django.conf import settings

from accounts.models import TokenScope
from accounts.tokens import EXPIRY_DAYS

MAX_REQUESTS_PER_MINUTE = 1200


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. the nightly script.")
    scope = forms.ChoiceField(
        choices=TokenScope.choices,
        initial=TokenScope.READ,
        widget=forms.RadioSelect,
        help_text="Give a script the least it needs: reading is enough to follow runs and "
        "fetch tables.",
    )
    days = forms.TypedChoiceField(
        choices=[(days, f"{days} days") for days in EXPIRY_DAYS],
        coerce=int,
        initial=90,
        label="Expires after",
    )
    requests_per_minute = forms.IntegerField(
        min_value=1,
        max_value=MAX_REQUESTS_PER_MINUTE,
        initial=lambda: settings.API_TOKEN_REQUESTS_PER_MINUTE,
        help_text="More than this in a minute is answered 429 (Retry-After says when to ask "
        "again).",
    )
