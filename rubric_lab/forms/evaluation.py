"""Forms for launching the lab's evaluation studies: every field checked on its own, with the
error beside it, and what the researcher typed kept when the form comes back."""

from django import forms

from benchmark.forms import (
    batch_field,
    batch_resend_live_field,
    cost_limit_field,
    model_validator,
)
from benchmark.models import BenchmarkSet, Run
from common.uploads import upload_size_check, uploaded_text
from jury.services.juries import offered_juries
from rubric_lab.engine import perturb
from rubric_lab.models import GenerationJob, JudgeSetup
from rubric_lab.services import refine, sensitivity

# The judge model's role in each setup that has one (the six-rubric setup uses a jury).
SETUP_JUDGE_PURPOSE = {JudgeSetup.INSTANCE: "rubric_judge", JudgeSetup.PAIRWISE: "pairwise_judge"}


def model_field(purpose: str, initial: str, label: str | None = None) -> forms.CharField:
    """A model string checked against the role it will play (offline behaviours included)."""
    return forms.CharField(
        max_length=200, initial=initial, label=label, validators=[model_validator(purpose)]
    )


def _runs():
    return Run.objects.order_by("-pk")


def _generation_jobs():
    return GenerationJob.objects.order_by("-pk")


class SensitivityLaunchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    run = forms.ModelChoiceField(queryset=_runs())
    reference_model = forms.CharField(
        max_length=200,
        required=False,
        initial="offline/careful",
        label="References by (model, blank = all)",
    )
    setup = forms.ChoiceField(choices=JudgeSetup.choices, label="Judge setup")
    jury = forms.ModelChoiceField(
        queryset=offered_juries(),  # fold juries only cross-fit a study
        required=False,
        label="Jury (six-rubric setup)",
    )
    generation_job = forms.ModelChoiceField(
        queryset=_generation_jobs(), required=False, label="Rubric generation job (instance setup)"
    )
    judge_model = forms.CharField(
        max_length=200,
        required=False,
        initial="offline/standard",
        label="Judge model (instance / pairwise)",
    )
    perturber_model = model_field("perturb", "offline/surgical", "Editor model for model edits")
    perturbations = forms.MultipleChoiceField(
        choices=[(p.name, p.label) for p in perturb.REGISTRY.values()],
        initial=list(perturb.REGISTRY),
        widget=forms.CheckboxSelectMultiple,
    )
    max_cases = forms.IntegerField(
        min_value=1, max_value=sensitivity.MAX_CASES, initial=20, label="References (max)"
    )
    seed = forms.IntegerField(initial=0, label="Bootstrap seed")
    min_type_references = forms.IntegerField(
        min_value=1,
        initial=5,
        required=False,
        label="Pooled figure: a type needs at least this many references",
    )
    min_type_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.25,
        required=False,
        label="... or, in a small study, this share of them (whichever is fewer)",
    )
    use_cache = forms.BooleanField(required=False, initial=True, label="Use the response cache")
    cost_limit_usd = cost_limit_field()
    batch = batch_field("The editor's and the judges' calls")
    batch_resend_live = batch_resend_live_field()

    def clean_min_type_references(self):
        return _or_initial(self, "min_type_references")

    def clean_min_type_share(self):
        return _or_initial(self, "min_type_share")

    def clean(self):
        data = super().clean()
        setup = data.get("setup")
        if setup == JudgeSetup.GENERIC and not data.get("jury"):
            self.add_error("jury", "The six-rubric setup needs a jury.")
        if setup == JudgeSetup.INSTANCE and not data.get("generation_job"):
            self.add_error("generation_job", "The instance-rubric setup needs a generation job.")
        if setup in SETUP_JUDGE_PURPOSE and "judge_model" in data:
            self._check_judge(data["judge_model"], SETUP_JUDGE_PURPOSE[setup])
        return data

    def _check_judge(self, model: str, purpose: str) -> None:
        if not model:
            self.add_error("judge_model", "This setup needs a judge model.")
            return
        try:
            model_validator(purpose)(model)
        except forms.ValidationError as error:
            self.add_error("judge_model", error)


def _or_initial(form: forms.Form, name: str):
    """A field left blank takes its initial value (the shipped default)."""
    value = form.cleaned_data.get(name)
    return form.fields[name].initial if value is None else value


class ExpertCriteriaUploadForm(forms.Form):
    benchmark_set = forms.ModelChoiceField(
        queryset=BenchmarkSet.objects.order_by("-pk"), label="Benchmark set"
    )
    file = forms.FileField(
        validators=[upload_size_check],
        help_text="CSV (case or conversation, criterion[, weight][, axis]) or a JSON list.",
    )

    def clean(self):
        data = super().clean()
        if data.get("file") is not None:
            try:
                data["text"] = uploaded_text(data["file"])
            except forms.ValidationError as error:
                self.add_error("file", error)
        return data


class CoverageLaunchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    generation_job = forms.ModelChoiceField(
        queryset=_generation_jobs(), label="Rubric generation job"
    )
    judge_model = model_field("coverage_entail", "offline/standard")
    cost_limit_usd = cost_limit_field()
    batch = batch_field("The judge's calls")
    batch_resend_live = batch_resend_live_field()


class RefineLaunchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    generation_job = forms.ModelChoiceField(
        queryset=_generation_jobs(), label="Rubric generation job"
    )
    evaluator_model = model_field("refine_critique", "offline/standard", "Evaluator")
    editor_model = model_field("refine_edit", "offline/standard", "Editor")
    judge_model = model_field("judge", "offline/strict", "Independent judge")
    criteria_judge_model = forms.CharField(
        max_length=200,
        required=False,
        initial="offline/standard",
        label="Judge against the expert criteria (blank: not scored against them)",
        validators=[model_validator("rubric_judge")],
    )
    max_cases = forms.IntegerField(
        min_value=1, max_value=refine.MAX_CASES, initial=20, label="Cases (max)"
    )
    cost_limit_usd = cost_limit_field()
    batch = batch_field("The evaluator's, editor's and judges' calls")
    batch_resend_live = batch_resend_live_field()


class AblationLaunchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    run = forms.ModelChoiceField(queryset=_runs())
    reference_model = forms.CharField(
        max_length=200,
        required=False,
        initial="offline/careful",
        label="Conversations by (model, blank = all)",
    )
    generator_model = model_field("rubric_synthesis", "offline/standard", "Generator")
    judge_model = forms.CharField(
        max_length=200,
        initial="offline/standard",
        label="Judge (instance rubric and coverage)",
        validators=[model_validator("rubric_judge"), model_validator("coverage_entail")],
    )
    perturber_model = model_field("perturb", "offline/surgical", "Editor for model edits")
    max_cases = forms.IntegerField(
        min_value=1, max_value=sensitivity.MAX_CASES, initial=10, label="Conversations (max)"
    )
    cost_limit_usd = cost_limit_field()
    batch = batch_field(
        "The calls of its rubric generations, coverage runs and sensitivity studies"
    )
    batch_resend_live = batch_resend_live_field()
