"""Forms for distributions, benchmark sets, agent configurations and run launches."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import forms

from benchmark.engine.agents.agent_config import AgentConfigError
from benchmark.models import AgentConfig, BenchmarkSet, Distribution
from benchmark.services import agents as agent_services
from benchmark.services.runs import AgentChoice
from common.uploads import upload_size_check, uploaded_text
from jobs.models import JobStatus
from llm.engine.chat import ProviderError
from llm.engine.providers.endpoints import EndpointError
from llm.engine.providers.model_strings import check_model_string
from llm.services import prices
from llm.services.endpoints import endpoint_list_check

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


def model_validator(purpose: str):
    """A field validator: `value` must be a model string fit for the role `purpose`."""

    def validate(value: str) -> str:
        try:
            check_model_string(value, purpose=purpose)
        except ProviderError as error:
            raise forms.ValidationError(str(error)) from None
        return value

    return validate


def unpriced_models(models: list[str]) -> list[str]:
    """Models with no price in force: a job without a cost limit may call them, and their
    cost shows as unknown; a job with a limit is refused (jobs.services.cost_limits)."""
    return prices.unpriced_models(models)


def unpriced_warning(model: str) -> str:
    return (
        f"{model} has no price (none in llm/data/prices.yaml, none set on the Prices "
        "page): its calls will be made, but their cost will show as unknown."
    )


def cost_limit_field() -> forms.DecimalField:
    """The same cost limit on every launch form (stored as 10 digits, 2 decimals)."""
    return forms.DecimalField(
        required=False,
        min_value=Decimal("0.01"),
        max_digits=10,
        decimal_places=2,
        label="Cost limit (USD)",
        help_text="Optional. No new work starts once this much is spent; every model of the "
        "job needs a price (see Prices).",
    )


def batch_field(calls: str) -> forms.BooleanField:
    """The same batch option on every launch form whose model calls may go in batches."""
    return forms.BooleanField(
        required=False,
        initial=False,
        label="Batch: about half the price, results within 24 h",
        help_text=f"{calls} go through the providers' batch APIs (openai/, anthropic/ and "
        "offline/ models only); the job's page shows each batch as it is polled.",
    )


def batch_resend_live_field() -> forms.BooleanField:
    return forms.BooleanField(
        required=False,
        initial=False,
        label="Resend failures live",
        help_text="A request a batch gave no answer (errored, expired) is called live at the "
        "list price at once, instead of waiting for another batch.",
    )


# The repetitions pass^k needs to say something (jury.engine.reliability.RECOMMENDED_REPETITIONS,
# kept equal by a test; benchmark does not import the jury).
RELIABILITY_REPETITIONS = 4


def short_reliability_warning(repetitions: int) -> str | None:
    if repetitions >= RELIABILITY_REPETITIONS:
        return None
    return (
        f"{repetitions} repetition(s) per case: the jury report's pass^k (reliability over "
        f"repeated encounters) will stop at k = {repetitions}; {RELIABILITY_REPETITIONS} or more "
        "give a useful curve."
    )


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
            data["yaml_text"] = uploaded_text(upload)
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
        validators=[model_validator("enrichment")],
        help_text="Enrichment model, e.g. openai/gpt-5.5",
    )
    cost_limit_usd = cost_limit_field()
    batch = batch_field("Enrichment calls")
    batch_resend_live = batch_resend_live_field()


AGENT_CONFIG_EXAMPLE = """\
# An example variant: edit it, then save. Lines starting with # are comments.
# id: lower-case letters, digits, - and _. A new id adds a configuration; an id that
# exists already adds a new version of that configuration.
id: plain_language
# name: how runs and reports label this configuration.
name: Plain-language assistant
# description: what this variant changes, in a sentence or two.
description: Baseline prompt plus an instruction to explain every step in plain words.
# prompt: the system prompt file, from benchmark/data/prompts.
prompt: assistant_baseline.md
# extra_instructions (optional): appended to the system prompt.
extra_instructions: |
  Explain each step in plain words without medical jargon, and before you finish check
  that the patient understood what happens next.
"""


class AgentConfigForm(forms.Form):
    yaml_text = forms.CharField(
        widget=forms.Textarea(attrs={"class": "code", "rows": 16}),
        label="New agent configuration (YAML)",
        initial=AGENT_CONFIG_EXAMPLE,
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
        queryset=BenchmarkSet.objects.filter(status=JobStatus.FINISHED, imported_from="")
    )
    models = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Models under test, one per line (openai/…, anthropic/…, "
        "openai-compatible/…, a named endpoint such as vllm-a/…, offline/careful, "
        "offline/careless). Settings follow an @: openai/gpt-5.5@effort=high, "
        "anthropic/claude-opus-4-8@thinking=8000; two settings of one model are two rows.",
    )
    agent_configs = forms.ModelMultipleChoiceField(
        queryset=AgentConfig.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Each model runs with each chosen configuration on the same cases.",
    )
    patient_model = forms.CharField(
        max_length=200, initial="offline/patient", validators=[model_validator("patient")]
    )
    roster_model = forms.CharField(
        max_length=200,
        initial="offline/patient",
        validators=[model_validator("roster")],
        help_text="Writes each conversation's offices and providers (one JSON answer before "
        "the conversation starts). Pre-filled with the default patient simulator, as the CLI "
        "uses the patient model unless told otherwise; choose a model that answers in valid "
        "JSON reliably, or every conversation fails at roster generation.",
    )
    repetitions = forms.IntegerField(
        min_value=1,
        max_value=10,
        initial=1,
        help_text=f"Encounters of each case per agent. Reliability over repeated encounters "
        f"(pass^k, in the jury report) needs at least {RELIABILITY_REPETITIONS}.",
    )
    concurrency = forms.IntegerField(min_value=1, max_value=256, initial=16)
    max_turns = forms.IntegerField(min_value=1, max_value=15, initial=15)
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)
    use_cache = forms.BooleanField(
        required=False, initial=True, help_text="Identical model calls are answered from the cache."
    )
    cost_limit_usd = cost_limit_field()

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
        validate = model_validator("assistant")
        for model in models:
            validate(model)
        return models

    def unpriced(self) -> list[str]:
        data = self.cleaned_data
        return unpriced_models([*data["models"], data["patient_model"], data["roster_model"]])

    def agent_choices(self) -> list[AgentChoice]:
        data = self.cleaned_data
        return [
            AgentChoice(model, config)
            for model in data["models"]
            for config in data["agent_configs"]
        ]

    FORECAST_FIELDS = (
        "benchmark_set",
        "models",
        "agent_configs",
        "patient_model",
        "roster_model",
        "repetitions",
    )

    def forecast_arguments(self) -> dict | None:
        """What benchmark.services.forecasts.run_forecast needs, once `is_valid()` ran; None
        while one of those fields is missing or wrong (the launch page's panel waits), even
        if the rest of the form (its name) is not filled in yet."""
        data = self.cleaned_data
        if any(name not in data for name in self.FORECAST_FIELDS):
            return None
        return {
            "benchmark_set": data["benchmark_set"],
            "agents": self.agent_choices(),
            "patient_model": data["patient_model"],
            "roster_model": data["roster_model"],
            "repetitions": data["repetitions"],
        }

    def launch_arguments(self) -> dict:
        data = self.cleaned_data
        agents = self.agent_choices()
        return {
            "name": data["name"],
            "benchmark_set": data["benchmark_set"],
            "agents": agents,
            "patient_model": data["patient_model"],
            "roster_model": data["roster_model"],
            "repetitions": data["repetitions"],
            "concurrency": data["concurrency"],
            "use_cache": data["use_cache"],
            "cost_limit_usd": data["cost_limit_usd"],
            "max_turns": data["max_turns"],
            "seed": data["seed"],
        }


def _price_field(what: str, *, required: bool = True, help_text: str = "") -> forms.DecimalField:
    """A price in USD per million tokens."""
    return forms.DecimalField(
        min_value=0,
        max_digits=12,
        decimal_places=6,
        required=required,
        label=f"{what}, USD per million tokens",
        help_text=help_text,
    )


class PriceForm(forms.Form):
    model = forms.CharField(
        max_length=200,
        label="Model string",
        help_text="One exact model string, e.g. openai-compatible/meta-llama/Llama-3.1-8B "
        "(patterns such as openai/* stay in llm/data/prices.yaml).",
    )
    input_per_million = _price_field("Input")
    output_per_million = _price_field("Output")
    cached_input_per_million = _price_field(
        "Cached input",
        required=False,
        help_text="Input read from the provider's prompt cache. Blank: the input price.",
    )
    cache_write_per_million = _price_field(
        "Cache write",
        required=False,
        help_text="Input written to the prompt cache (Anthropic). Blank: the input price.",
    )
    note = forms.CharField(
        max_length=300, required=False, label="Why (e.g. the provider's price page, a date)"
    )

    def clean_model(self) -> str:
        try:
            return prices.model_string_check(self.cleaned_data["model"])
        except prices.PriceError as error:
            raise forms.ValidationError(str(error)) from None


class EndpointListForm(forms.Form):
    yaml_text = forms.CharField(
        widget=forms.Textarea(attrs={"class": "code", "rows": 18, "spellcheck": "false"}),
        label="Endpoints (YAML)",
        help_text="The format of llm/data/endpoints.yaml: a list of name, base_url, "
        "api_key_env (the variable's name, never the key), and optionally "
        "requests_per_minute, tokens_per_minute, concurrency.",
    )
    note = forms.CharField(max_length=300, required=False, label="Why")

    def clean_yaml_text(self) -> str:
        text = self.cleaned_data["yaml_text"]
        try:
            endpoint_list_check(text)
        except EndpointError as error:
            raise forms.ValidationError(error.problems) from None
        return text


class ConversationImportForm(forms.Form):
    file = forms.FileField(
        validators=[upload_size_check],
        help_text="JSON Lines, one conversation per line: OpenAI chat format (messages with "
        "tool calls and results; optional id, model, patient_record, scenario), or a run "
        "export of this site.",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Name of the imported run (default: the file's)."
    )
