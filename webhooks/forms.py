"""The form that registers a webhook (the page and the API route both use it)."""

from django import forms
from django.core.exceptions import ValidationError

from webhooks.services.hooks import webhook_url_check


class WebhookForm(forms.Form):
    url = forms.CharField(
        max_length=500,
        label="URL",
        help_text="Where the site POSTs each event: http:// or https:// (https outside a lab "
        "network: the body is signed, not encrypted), at a public address unless the site "
        "allows private ones.",
    )
    description = forms.CharField(
        max_length=200, required=False, help_text="What it is for, e.g. the lab's chat bot."
    )

    def clean_url(self) -> str:
        try:
            return webhook_url_check(self.cleaned_data["url"])
        except ValidationError as error:
            raise forms.ValidationError(error.messages) from None
