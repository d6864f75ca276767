"""What a person may change about their own account from the site's pages."""

from django import forms

from accounts.models import TextSize, Theme


class DisplayForm(forms.Form):
    """Theme and text size; a field left out of the post keeps its value."""

    theme = forms.ChoiceField(choices=Theme.choices, required=False)
    text_size = forms.ChoiceField(choices=TextSize.choices, required=False)
