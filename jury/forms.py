"""Forms for rubric versions, juries and launching a scoring job."""

from __future__ import annotations

from django import forms

from benchmark.forms import (
    batch_field,
    batch_resend_live_field,
    cost_limit_field,
    unpriced_models,
)
from jury.engine.aggregate import PASS_THRESHOLD
from jury.engine.decision import TARGET_COEFFICIENT
from jury.models import Jury, MergeMode, RubricVersion, ScoringJob
from jury.services import juries


class RubricVersionForm(forms.Form):
    yaml_text = forms.CharField(
        label="Rubric YAML",
        widget=forms.Textarea(attrs={"class": "code", "spellcheck": "false"}),
        help_text="The version number is set for you: the highest so far plus one.",
    )
    note = forms.CharField(max_length=300, required=False, label="What changed and why")

    def __init__(self, *args, base: RubricVersion, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial.setdefault("yaml_text", base.yaml_text)


class JuryForm(forms.Form):
    name = forms.CharField(max_length=200)
    judges = forms.CharField(
        label="Judge models, one per line",
        widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
        help_text="e.g. openai/gpt-5.5 and anthropic/claude-opus-4-1; offline/standard, "
        "offline/strict, offline/lenient and offline/flaky are scripted judges.",
    )
    pass_threshold = forms.FloatField(initial=PASS_THRESHOLD, min_value=1, max_value=5)
    merge_mode = forms.ChoiceField(choices=MergeMode.choices, initial=MergeMode.MEAN)

    def __init__(self, *args, default_weights: dict[str, float], rubric_names: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.rubric_ids = list(default_weights)
        for rubric_id, weight in default_weights.items():
            self.fields[self._weight_field(rubric_id)] = forms.FloatField(
                label=f"Weight: {rubric_names[rubric_id]}", initial=weight, min_value=0
            )

    @staticmethod
    def _weight_field(rubric_id: str) -> str:
        return f"weight_{rubric_id}"

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Jury.objects.filter(name=name).exists():
            raise forms.ValidationError("A jury with this name exists already.")
        return name

    def clean_judges(self) -> list[str]:
        return juries.judges_parse(self.cleaned_data["judges"])

    def unpriced(self) -> list[str]:
        return unpriced_models(self.cleaned_data["judges"])

    def clean(self) -> dict:
        data = super().clean()
        weights = {rubric: data.get(self._weight_field(rubric)) for rubric in self.rubric_ids}
        if None not in weights.values():
            data["weights"] = juries.weights_check(weights, self.rubric_ids)
        return data

    def jury_arguments(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "judges": data["judges"],
            "weights": data["weights"],
            "pass_threshold": data["pass_threshold"],
            "merge_mode": data["merge_mode"],
        }


class ScoreRunForm(forms.Form):
    # Fold juries exist only to cross-fit a study: never offered for a run.
    jury = forms.ModelChoiceField(queryset=juries.offered_juries(), empty_label=None)
    use_cache = forms.BooleanField(
        required=False,
        initial=True,
        label="Use the response cache (identical judge calls cost nothing)",
    )
    cost_limit_usd = cost_limit_field()
    batch = batch_field("Judge calls")
    batch_resend_live = batch_resend_live_field()


class PlanForm(forms.Form):
    """Plan a run (jury.services.planning): the earlier run to learn from, the score whose
    precision matters and the target; optionally a run size to try."""

    TARGETS = [
        ("half_width", "A 95% interval of +/- this many points"),
        ("coefficient", "A generalizability coefficient of"),
    ]
    job = forms.ModelChoiceField(
        queryset=ScoringJob.objects.none(),
        label="Learn from",
        help_text="A finished scoring job of an earlier run of the same set, or of a small pilot.",
    )
    measure = forms.ChoiceField(label="Score", choices=[("aggregate", "Aggregate")])
    target = forms.ChoiceField(choices=TARGETS, initial="half_width", widget=forms.RadioSelect)
    half_width = forms.FloatField(label="Half-width", initial=0.1, min_value=0.001, max_value=4)
    goal = forms.FloatField(
        label="Coefficient", initial=TARGET_COEFFICIENT, min_value=0.01, max_value=0.99
    )
    cases = forms.IntegerField(label="Try: cases", required=False, min_value=1, max_value=10**6)
    repetitions = forms.IntegerField(label="repetitions", required=False, min_value=1, max_value=50)
    judges = forms.IntegerField(label="judges", required=False, min_value=1, max_value=20)

    def __init__(self, *args, sources, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["job"].queryset = sources
        self.fields["job"].label_from_instance = _source_label
        job = self._chosen_job(sources)
        if job is not None:
            rubrics = job.rubric_versions.order_by("order").values_list("rubric_id", "name")
            self.fields["measure"].choices = [("aggregate", "Aggregate"), *rubrics]

    def _chosen_job(self, sources):
        chosen = self.data.get("job") if self.is_bound else None
        if chosen and str(chosen).isdigit():
            return sources.filter(pk=chosen).first()
        return sources.first()

    def what_if(self) -> tuple[int, int, int] | None:
        size = [self.cleaned_data.get(name) for name in ("cases", "repetitions", "judges")]
        return tuple(size) if all(size) else None

    def targets(self) -> dict:
        if self.cleaned_data["target"] == "half_width":
            return {"half_width": self.cleaned_data["half_width"]}
        return {"goal": self.cleaned_data["goal"]}


def _source_label(job: ScoringJob) -> str:
    run = job.run
    return f"{run.name} ({run.benchmark_set.name}, {run.repetitions} repetitions) · {job.jury.name}"
