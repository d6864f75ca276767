"""Forms for distributions, benchmark sets, agent configurations and run launches."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import forms

from benchmark.engine.agents.agent_config import AgentConfigError
from benchmark.engine.chat import ProviderError
from benchmark.engine.providers.model_strings import parse_model_string
from benchmark.models import AgentConfig, BenchmarkSet, Distribution, JobStatus
from benchmark.services import agents as agent_services
from benchmark.services.runs import AgentChoice

MAX_UPLOAD_BYTES = 1_000_000
MAX_SEED = 2**63 - 1  # seeds are stored in signed 64-bit columns
MAX_COST_LIMIT = Decimal("99999999.99")  # Run.cost_limit_usd: 10 digits, 2 decimals


def optional_decimal(raw: str | None) -> Decimal | None:
    """A cost limit typed into the resume form: blank for none, else dollars within range."""
    if raw is None or not raw.strip():
        return None
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        raise ValueError(f"{raw!r} is not an amount in dollars.") from None
    if not value.is_finite() or not Decimal("0.01") <= value <= MAX_COST_LIMIT:
        raise ValueError(f"A cost limit must be between $0.01 and ${MAX_COST_LIMIT:,}.")
    return value.quantize(Decimal("0.01"))


def validate_model_string(value: str) -> str:
    try:
        parse_model_string(value)
    except ProviderError as error:
        raise forms.ValidationError(str(error)) from None
    return value


class DistributionForm(forms.Form):
    name = forms.CharField(max_length=200)
    yaml_file = forms.FileField(required=False, label="Upload a YAML file")
    yaml_text = forms.CharField(
        widget=forms.Textarea(attrs={"class": "code"}),
        required=False,
        label="…or edit the YAML here",
    )

    def __init__(self, *args, base: Distribution | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if base is not None:
            self.initial.update({"name": f"{base.name} (edited)", "yaml_text": base.yaml_text})

    def clean(self):
        data = super().clean()
        upload = data.get("yaml_file")
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:
                raise forms.ValidationError("The file is larger than 1 MB.")
            try:
                data["yaml_text"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if not (data.get("yaml_text") or "").strip():
            raise forms.ValidationError("Upload a file or paste the distribution YAML.")
        return data

    def add_problems(self, problems) -> None:
        for problem in problems:
            self.add_error(None, str(problem))


class BenchmarkSetForm(forms.Form):
    name = forms.CharField(max_length=200)
    distribution = forms.ModelChoiceField(queryset=Distribution.objects.all())
    size = forms.IntegerField(min_value=1, max_value=20_000, initial=24)
    sampler_seed = forms.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        initial=2026,
        help_text="Same distribution + same seed = same cases.",
    )
    generator_model = forms.CharField(
        max_length=200,
        initial="offline/standard",
        validators=[validate_model_string],
        help_text="Enrichment model, e.g. openai/gpt-5.5",
    )


class AgentConfigForm(forms.Form):
    yaml_text = forms.CharField(
        widget=forms.Textarea(attrs={"class": "code", "rows": 12}),
        label="New agent configuration (YAML)",
    )

    def save_config(self) -> AgentConfig | None:
        try:
            return agent_services.agent_config_save(yaml_text=self.cleaned_data["yaml_text"])
        except AgentConfigError as error:
            self.add_error("yaml_text", str(error))
            return None


class RunForm(forms.Form):
    name = forms.CharField(max_length=200)
    benchmark_set = forms.ModelChoiceField(
        queryset=BenchmarkSet.objects.filter(status=JobStatus.FINISHED)
    )
    models = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Models under test, one per line (openai/…, anthropic/…, "
        "openai-compatible/…, offline/careful, offline/careless).",
    )
    agent_configs = forms.ModelMultipleChoiceField(
        queryset=AgentConfig.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Each model runs with each chosen configuration on the same cases.",
    )
    patient_model = forms.CharField(
        max_length=200, initial="offline/patient", validators=[validate_model_string]
    )
    repetitions = forms.IntegerField(min_value=1, max_value=10, initial=1)
    concurrency = forms.IntegerField(min_value=1, max_value=256, initial=16)
    max_turns = forms.IntegerField(min_value=1, max_value=15, initial=15)
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)
    use_cache = forms.BooleanField(
        required=False, initial=True, help_text="Identical model calls are answered from the cache."
    )
    cost_limit_usd = forms.DecimalField(
        required=False,
        min_value=Decimal("0.01"),
        max_digits=10,
        decimal_places=2,
        label="Cost limit (USD)",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["models"].initial = "offline/careful\noffline/careless"
        latest = agent_services.latest_agent_configs()
        self.fields["agent_configs"].queryset = AgentConfig.objects.filter(
            pk__in=[c.pk for c in latest]
        )
        self.fields["agent_configs"].initial = [c.pk for c in latest if c.slug == "baseline"]

    def clean_models(self) -> list[str]:
        models = [line.strip() for line in self.cleaned_data["models"].splitlines()]
        models = [m for m in models if m]
        if not models:
            raise forms.ValidationError("Name at least one model.")
        for model in models:
            validate_model_string(model)
        return models

    def launch_arguments(self) -> dict:
        data = self.cleaned_data
        agents = [
            AgentChoice(model, config)
            for model in data["models"]
            for config in data["agent_configs"]
        ]
        return {
            "name": data["name"],
            "benchmark_set": data["benchmark_set"],
            "agents": agents,
            "patient_model": data["patient_model"],
            "repetitions": data["repetitions"],
            "concurrency": data["concurrency"],
            "use_cache": data["use_cache"],
            "cost_limit_usd": data["cost_limit_usd"],
            "max_turns": data["max_turns"],
            "seed": data["seed"],
        }
