"""Researcher forms: a new study, invalidating an annotation, a calibration guide, an import."""

from __future__ import annotations

from django import forms

from annotation.models import StudyItem, StudyKind
from annotation.services.studies import StudySpec
from common.uploads import upload_size_check
from jobs.models import JobStatus
from jury.models import RubricVersion, ScoringJob
from jury.services.rubrics import current_versions

# Service error keys that differ from the form's field names.
SPEC_FIELDS = {"project_name": "project"}
# Settings of the study's analysis that may be left blank for their defaults.
DESIGN_SETTINGS = ("alt_test_epsilon", "drift_flag_points")


class JobChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, job: ScoringJob) -> str:
        return f"#{job.pk} {job.jury.name} on {job.run.name}"


class StudyForm(forms.Form):
    project = forms.CharField(
        max_length=200,
        widget=forms.TextInput(attrs={"list": "projects"}),
        help_text="Pick a project or type a new name. Calibration rounds hold their "
        "conversations out of every target study of the same project.",
    )
    name = forms.CharField(
        max_length=200, help_text="Annotators see it: never name a model or agent here."
    )
    kind = forms.ChoiceField(choices=StudyKind.choices, initial=StudyKind.CALIBRATION)
    round_number = forms.IntegerField(
        required=False, min_value=1, help_text="Calibration rounds only: 1, 2, 3, ..."
    )
    scoring_jobs = JobChoice(
        queryset=ScoringJob.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Finished scoring jobs to draw conversations from.",
    )
    rubric_versions = forms.ModelMultipleChoiceField(
        queryset=RubricVersion.objects.order_by("order", "rubric_id", "-version"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The versions annotators score against (default: the current version of "
        "every judged and realism rubric).",
    )
    sample_size = forms.IntegerField(initial=75)
    overlap_clinical = forms.IntegerField(
        initial=2,
        label="Overlap, clinical track",
        help_text="Annotations per rubric per conversation: 2 to 4.",
    )
    overlap_operational = forms.IntegerField(
        initial=2, label="Overlap, operational track", help_text="2 to 4."
    )
    seed = forms.IntegerField(initial=0, help_text="The same seed draws the same sample.")
    include_infeasible = forms.BooleanField(
        required=False,
        label="Include infeasible cases",
        help_text="Left out by default: an infeasible case contradicts its own patient on "
        "purpose (a condition the patient cannot have), so clinicians would score the "
        "contradiction rather than the agent.",
    )
    reservation_minutes = forms.IntegerField(
        initial=45,
        min_value=5,
        max_value=24 * 60,
        help_text="An opened item stays reserved this long after its last save.",
    )
    alt_test_epsilon = forms.FloatField(
        required=False,
        initial=0.2,
        min_value=0.0,
        max_value=1.0,
        label="Alternative annotator test: margin ε",
        help_text="How much of its advantage over a clinician the jury may give up and still "
        "replace one (Calderon et al.: 0.2 for expert annotators, 0.1 for crowd workers).",
    )
    drift_flag_points = forms.FloatField(
        required=False,
        initial=0.5,
        min_value=0.05,
        max_value=4.0,
        label="Flag a clinician's drift at (points)",
        help_text="A clinician is flagged for recalibration when their bias moves by more than "
        "this between two rounds of the project.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scoring_jobs"].queryset = ScoringJob.objects.filter(
            status=JobStatus.FINISHED
        ).select_related("jury", "run")
        self.initial.setdefault("rubric_versions", [v.pk for v in current_versions()])

    def spec(self) -> StudySpec:
        data = self.cleaned_data
        return StudySpec(
            project_name=data["project"],
            name=data["name"],
            kind=data["kind"],
            sample_size=data["sample_size"],
            overlap_clinical=data["overlap_clinical"],
            overlap_operational=data["overlap_operational"],
            round_number=data["round_number"],
            seed=data["seed"],
            include_infeasible=data["include_infeasible"],
            reservation_minutes=data["reservation_minutes"],
            # Left blank: the study's defaults (StudySpec's).
            **{name: data[name] for name in DESIGN_SETTINGS if data[name] is not None},
        )

    def add_service_errors(self, error_dict: dict[str, list[str]]) -> None:
        """Show the service's ValidationError under the field it is about."""
        for key, messages in error_dict.items():
            field = SPEC_FIELDS.get(key, key)
            for message in messages:
                self.add_error(field if field in self.fields else None, message)


class InvalidateForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Kept with the annotation and shown in exports; nothing is deleted.",
    )


class ImportForm(forms.Form):
    file = forms.FileField(
        validators=[upload_size_check],
        help_text="CSV or JSONL, one row per annotator x conversation x rubric (the export "
        "format). Required columns: conversation, annotator, track, rubric_id, score.",
    )
    # The accounts of real people the last check found the file's rows under, as shown; the
    # box confirms exactly those, so a different file cannot ride on the confirmation.
    accounts = forms.CharField(required=False, widget=forms.HiddenInput)
    confirm = forms.BooleanField(
        required=False, label="These rows are the work of the existing accounts listed above"
    )

    def confirmed_accounts(self) -> set[str]:
        if not self.cleaned_data.get("confirm"):
            return set()
        return {name for name in self.cleaned_data["accounts"].split(",") if name}

    def ask_confirmation(self, usernames: list[str]) -> None:
        """Show the confirmation box for these accounts (unticked) when the page comes back."""
        self.data = self.data.copy()
        self.data["accounts"] = ",".join(usernames)
        self.data["confirm"] = ""


class GuideForm(forms.Form):
    """Title, markdown body, and a note field per item of the round: items given a note become
    the guide's worked examples."""

    title = forms.CharField(max_length=200)
    body_markdown = forms.CharField(
        label="Guide (markdown)",
        widget=forms.Textarea(attrs={"rows": 14, "class": "code"}),
        help_text="Markdown; raw HTML is shown as text.",
    )

    def __init__(self, *args, items: list[StudyItem], **kwargs):
        super().__init__(*args, **kwargs)
        self.items = items
        for item in items:
            self.fields[self.note_field(item)] = forms.CharField(
                required=False,
                max_length=2000,
                label=f"Item {item.position + 1}",
                widget=forms.TextInput(attrs={"placeholder": "what this example teaches"}),
            )

    @staticmethod
    def note_field(item: StudyItem) -> str:
        return f"note_{item.pk}"

    def examples(self) -> list[dict]:
        notes = ((item, self.cleaned_data.get(self.note_field(item), "")) for item in self.items)
        return [{"item": item.pk, "note": note} for item, note in notes if note.strip()]

    def note_rows(self):
        return [(item, self[self.note_field(item)]) for item in self.items]
