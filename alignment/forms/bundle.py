"""The static report button's choices: which scoring jobs, and whether clinicians' words go in."""

from __future__ import annotations

from django import forms

from jury.models import ScoringJob


class BundleForm(forms.Form):
    job = forms.ModelMultipleChoiceField(
        queryset=ScoringJob.objects.select_related("run", "jury"),
        error_messages={"required": "Choose at least one scoring job."},
    )
    clinician_text = forms.BooleanField(
        required=False,
        label="Include clinicians' written feedback",
        help_text="Their names never go in; off: only their scores, under pseudonyms C1, C2, ...",
    )
