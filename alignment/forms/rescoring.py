"""The re-score form: a jury (existing or new), a version per judged rubric, a judge prompt."""

from __future__ import annotations

from django import forms

from annotation.models import Study
from jury.forms import JuryForm
from jury.models import Jury, RubricVersion
from jury.services import rubrics, scoring
from jury.services.juries import offered_juries

NEW_JURY = "new"
LEAVE_OUT = ""


class RescoreForm(forms.Form):
    jury = forms.ChoiceField(label="Jury")
    judge_template = forms.CharField(
        label="Judge prompt",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "class": "code", "spellcheck": "false"}),
        help_text="The shipped template; edit it for a prompt variant. It keeps one "
        "<!-- system --> and one <!-- user --> line and the $placeholders of the shipped one.",
    )
    use_cache = forms.BooleanField(
        required=False,
        initial=True,
        label="Use the response cache (identical judge calls cost nothing)",
    )

    def __init__(self, *args, study: Study, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["jury"].choices = [
            *((str(jury.pk), _jury_label(jury)) for jury in offered_juries()),
            (NEW_JURY, "A new jury (fill in below)"),
        ]
        self.initial.setdefault("judge_template", scoring.shipped_judge_template_text())
        self.rubric_ids = []
        for studied in study_judged_versions(study):
            name = version_field(studied.rubric_id)
            self.rubric_ids.append(studied.rubric_id)
            self.fields[name] = forms.ChoiceField(
                label=studied.name,
                required=False,
                initial=str(studied.pk),
                choices=[*_version_choices(studied), (LEAVE_OUT, "leave out")],
            )

    def clean_judge_template(self) -> str:
        try:
            return scoring.judge_template_check(self.cleaned_data["judge_template"])
        except scoring.ScoringError as error:
            raise forms.ValidationError(str(error)) from error

    def clean(self) -> dict:
        data = super().clean()
        chosen = [data.get(version_field(rubric)) for rubric in self.rubric_ids]
        if not any(chosen):
            raise forms.ValidationError("Pick a version of at least one rubric to score.")
        return data

    @property
    def creates_jury(self) -> bool:
        return self.cleaned_data["jury"] == NEW_JURY

    def chosen_versions(self) -> list[RubricVersion]:
        ids = [self.cleaned_data.get(version_field(rubric)) for rubric in self.rubric_ids]
        return list(RubricVersion.objects.filter(pk__in=[pk for pk in ids if pk]))

    def existing_jury(self) -> Jury:
        return offered_juries().get(pk=self.cleaned_data["jury"])


def new_jury_form(data=None) -> JuryForm:
    """The jury page's form, prefixed so its fields sit beside the re-score form's."""
    versions = rubrics.current_versions(judged_only=True)
    return JuryForm(
        data,
        prefix="new",
        default_weights=rubrics.current_weights(),
        rubric_names={v.rubric_id: v.name for v in versions},
    )


def study_judged_versions(study: Study) -> list[RubricVersion]:
    """The judged rubric versions the study's clinicians scored, in rubric order."""
    return list(study.rubric_versions.filter(kind="dimension").order_by("order", "rubric_id"))


def version_field(rubric_id: str) -> str:
    return f"version_{rubric_id}"


def _version_choices(studied: RubricVersion) -> list[tuple[str, str]]:
    versions = RubricVersion.objects.filter(rubric_id=studied.rubric_id).order_by("-version")
    return [(str(v.pk), _version_label(v, studied)) for v in versions]


def _version_label(version: RubricVersion, studied: RubricVersion) -> str:
    notes = [
        note
        for note, applies in (
            ("the study's", version.pk == studied.pk),
            ("current", version.is_current),
        )
        if applies
    ]
    suffix = f" ({', '.join(notes)})" if notes else ""
    return f"v{version.version}{suffix}"


def _jury_label(jury: Jury) -> str:
    return f"{jury.name} (K={len(jury.judges)}: {', '.join(jury.judges)})"
