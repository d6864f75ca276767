"""Researcher forms for running a study: enrolment, quotas, deadlines and moving work."""

from __future__ import annotations

from django import forms

from annotation.services.moves import EXTEND_HOURS


class PersonChoice(forms.ModelChoiceField):
    def label_from_instance(self, person) -> str:
        licensed = "" if person.licensed else ", not licensed"
        return f"{person.username} ({person.get_track_display().lower()}{licensed})"


class PeopleChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, person) -> str:
        flags = [person.get_track_display().lower()]
        flags += [] if person.licensed else ["not licensed: calibration practice only"]
        flags += ["senior clinician"] if person.senior else []
        name = person.get_full_name()
        return f"{person.username}{f' · {name}' if name else ''} ({', '.join(flags)})"


def _quota_field() -> forms.IntegerField:
    return forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10_000,
        label="Quota (items per study)",
        help_text="How many items of each study of the project each is asked to score; the "
        "queue serves them no more. Blank: no limit (the overlap decides).",
    )


class EnrolForm(forms.Form):
    people = PeopleChoice(queryset=None, widget=forms.CheckboxSelectMultiple, label="Annotators")
    quota = _quota_field()

    def __init__(self, *args, candidates, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["people"].queryset = candidates


class QuotaForm(forms.Form):
    quota = _quota_field()


class DeadlineForm(forms.Form):
    deadline = forms.DateTimeField(
        required=False,
        label="Deadline (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Blank clears it. Enrolled annotators with work left are reminded two days "
        "before.",
    )


class ReassignForm(forms.Form):
    to = PersonChoice(queryset=None, label="Give to")

    def __init__(self, *args, receivers, **kwargs):
        # No ids: the study page shows one of these per annotator; the label is on the select.
        super().__init__(*args, auto_id=False, **kwargs)
        self.fields["to"].queryset = receivers
        self.fields["to"].widget.attrs["aria-label"] = "Give to"


class ExtendForm(forms.Form):
    hours = forms.TypedChoiceField(
        choices=[(h, f"{h} hours") for h in EXTEND_HOURS], coerce=int, label="Extend by"
    )


class NoteForm(forms.Form):
    note = forms.CharField(max_length=500, required=False, label="Note")


class ReopenForm(forms.Form):
    note = forms.CharField(
        max_length=500,
        label="What should they look at again?",
        help_text="The annotator reads it in the notification.",
    )


class AdjudicationSendForm(forms.Form):
    item = forms.IntegerField(min_value=1)
    rubric = forms.CharField(max_length=60)


class SecondPhaseForm(forms.Form):
    draws = forms.IntegerField(
        min_value=1,
        max_value=2000,
        label="Conversations to draw",
        help_text="Drawn with probability proportional to how much each would teach, over "
        "every conversation the study draws from (a draw of one already in the study adds "
        "nothing); every item keeps an exact chance of being in the study, so the "
        "population-weighted figures stay valid.",
    )
    spread_weight = forms.FloatField(
        min_value=0,
        max_value=10,
        initial=1.0,
        label="Weight of judge disagreement",
        help_text="The widest spread of the judges' scores on one rubric (0 to 1).",
    )
    nearness_weight = forms.FloatField(
        min_value=0,
        max_value=10,
        initial=1.0,
        label="Weight of a verdict near the threshold",
        help_text="How close a rubric's jury mean lies to the pass threshold (0 to 1).",
    )
    seed = forms.IntegerField(initial=0, label="Seed")
