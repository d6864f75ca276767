"""Forms for the rubric lab's generation side: knowledge upload and search, pipeline launch,
scoring a conversation with an instance rubric."""

from django import forms

from benchmark.forms import (
    batch_field,
    batch_resend_live_field,
    cost_limit_field,
    model_validator,
)
from benchmark.models import Run
from common.uploads import upload_size_check
from rubric_lab.engine.pipeline import (
    DEFAULT_AUDIT_ROUNDS,
    DIRECT_STAGES,
    MAX_AUDIT_ROUNDS,
    MODEL_STAGES,
    stages_of,
)
from rubric_lab.models import GenerationMethod, RetrieverKind

SAMPLED_STAGES = (*MODEL_STAGES, *DIRECT_STAGES)


class KnowledgeSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=300, label="Search")
    retriever = forms.ChoiceField(choices=RetrieverKind.choices, initial=RetrieverKind.BM25)


class KnowledgeUploadForm(forms.Form):
    file = forms.FileField(
        validators=[upload_size_check],
        help_text="CSV, JSON or YAML rows with passage_id, topic, title, text, source, "
        "source_version and optional tags (';'-separated in CSV).",
    )


class PipelineLaunchForm(forms.Form):
    run = forms.ModelChoiceField(queryset=Run.objects.all())
    conversation = forms.UUIDField(
        required=False,
        help_text="One conversation's id; leave empty for every scorable conversation of the run.",
    )
    limit = forms.IntegerField(
        min_value=1, max_value=500, initial=20, help_text="At most this many conversations."
    )
    generator_model = forms.CharField(
        max_length=200, initial="offline/standard", validators=[model_validator("rubric_synthesis")]
    )
    judge_model = forms.CharField(
        max_length=200,
        required=False,
        initial="offline/standard",
        validators=[model_validator("rubric_judge")],
        help_text="Scores each rubric's own conversation once it exists; empty: no scoring.",
    )
    method = forms.ChoiceField(
        choices=GenerationMethod.choices, initial=GenerationMethod.PIPELINE, required=False
    )
    retriever = forms.ChoiceField(choices=RetrieverKind.choices, initial=RetrieverKind.BM25)
    top_k = forms.IntegerField(min_value=1, max_value=20, initial=4, label="Passages per query")
    skip_routing = forms.BooleanField(required=False, label="Ablation: without routing")
    skip_intent = forms.BooleanField(required=False, label="Ablation: without interaction intent")
    skip_facts = forms.BooleanField(
        required=False, label="Ablation: without the medical-fact agent"
    )
    skip_audit = forms.BooleanField(required=False, label="Ablation: without audit")
    audit_rounds = forms.IntegerField(
        min_value=1,
        max_value=MAX_AUDIT_ROUNDS,
        initial=DEFAULT_AUDIT_ROUNDS,
        required=False,
        label="Audit rounds (revise until one passes, at most this many)",
    )
    temperature = forms.FloatField(
        required=False,
        min_value=0,
        max_value=2,
        label="Temperature of every model stage (blank: the provider's default)",
        help_text="The source generated at 0.7. A model that takes no temperature (a "
        "reasoning model, Claude while thinking) is called without it.",
    )
    top_p = forms.FloatField(
        required=False,
        min_value=0.01,
        max_value=1,
        label="Top-p of every model stage (blank: the provider's default)",
        help_text="The source used 0.9.",
    )
    use_cache = forms.BooleanField(required=False, initial=True)
    cost_limit_usd = cost_limit_field()
    batch = batch_field(
        "The pipeline's calls (no rubric is scored as it is made: the judge is left blank unless "
        "you name one, which batch mode refuses)"
    )
    batch_resend_live = batch_resend_live_field()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # One row per model stage, over the every-stage values above.
        for stage in SAMPLED_STAGES:
            self.fields[f"temperature_{stage}"] = forms.FloatField(
                required=False, min_value=0, max_value=2, label=f"{stage.capitalize()}: temperature"
            )
            self.fields[f"top_p_{stage}"] = forms.FloatField(
                required=False, min_value=0.01, max_value=1, label=f"{stage.capitalize()}: top-p"
            )

    def clean_method(self) -> str:
        return self.cleaned_data["method"] or GenerationMethod.PIPELINE  # blank: the default

    def clean(self):
        data = super().clean()
        # The default judge scores each rubric as its generation ends, outside the batches:
        # ticking Batch with the judge as the page offered it means no judge, while a judge
        # the researcher chose is kept and refused by the launch with its reason.
        if data.get("batch") and "judge_model" not in self.changed_data:
            data["judge_model"] = ""
        return data

    def clean_audit_rounds(self) -> int:
        rounds = self.cleaned_data["audit_rounds"]
        return DEFAULT_AUDIT_ROUNDS if rounds is None else rounds

    def conversations(self) -> list:
        """The run's scorable conversations to build rubrics for: the one asked for, or the
        first `limit`."""
        data = self.cleaned_data
        found = data["run"].conversations.scorable()
        if data["conversation"]:
            found = found.filter(public_id=data["conversation"])
        return list(found[: data["limit"]])

    def sampling(self) -> dict[str, dict[str, float | None]]:
        """Each model stage of the chosen method: its own value where given, else the
        every-stage one."""
        data = self.cleaned_data
        stages = [s for s in stages_of(data["method"]) if s in SAMPLED_STAGES]
        return {
            stage: {
                key: data[f"{key}_{stage}"] if data[f"{key}_{stage}"] is not None else data[key]
                for key in ("temperature", "top_p")
            }
            for stage in stages
        }


# A score is one leased task with no study around it (no cost limit, no units to replay), so
# the batch glue has nothing to drive: it is judged live, and asking for a batch is refused
# rather than silently ignored (the API takes the same `batch` names as every other launch).
SCORE_BATCH_REFUSAL = (
    "A rubric's score has no batch mode: its criteria are judged live (a few calls, answered "
    "in seconds). Score many replies in batch mode with a sensitivity study or a coverage run."
)
TRUE_VALUES = (True, "on", "true", "True", "1")


class InstanceScoreForm(forms.Form):
    conversation = forms.ModelChoiceField(queryset=None, to_field_name="public_id")
    judge_model = forms.CharField(
        max_length=200, initial="offline/standard", validators=[model_validator("rubric_judge")]
    )

    def __init__(self, *args, conversations, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["conversation"].queryset = conversations
        self.fields["conversation"].label_from_instance = lambda c: (
            f"{c.public_id} ({c.run.name}, case {c.entry.index})"
        )

    def clean(self):
        asked = [name for name in ("batch", "batch_resend_live") if self._asked(name)]
        if asked:
            raise forms.ValidationError(SCORE_BATCH_REFUSAL, code="no_batch_mode")
        return super().clean()

    def _asked(self, name: str) -> bool:
        return self.is_bound and self.data.get(name) in TRUE_VALUES


class HealthBenchImportForm(forms.Form):
    file = forms.FileField(
        validators=[upload_size_check],
        help_text="HealthBench-format JSON Lines: one object per line with prompt_id, prompt "
        "(the chat messages), optional completion (the reply to score), rubrics (criterion, "
        "points, tags) and example_tags.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Name of the imported run (default: the file's)."
    )
    source_subset = forms.BooleanField(
        required=False,
        label="Only the source's subset: rows whose physician rubric has 8 to 10 criteria "
        "across at least three axes",
    )
