"""Generation settings per model: reasoning effort, thinking, the output limit and sampling.

A model string may carry settings after an "@" (`openai/gpt-5.5@effort=high,max_tokens=16000`),
so every place a model is chosen (a run's models under test, the patient, the roster,
enrichment, each judge seat, each rubric-lab stage; forms, CLI and API alike) takes them, and
two settings of one model are two models of a run. The family a model belongs to
(llm/data/generation.yaml) says which settings it takes and fills in its defaults; settings it
refuses are named before a job starts (`settings_problems`). Each call's request gets the
effective settings (`apply`): the model string's own, then the family's defaults, then the
role's own preferences where the model takes them (a role's temperature 0 is dropped for a
reasoning model, never sent to be refused). Pure: no Django.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from llm.engine.seeds import provider_seed

GENERATION_PATH = Path(__file__).resolve().parents[1] / "data" / "generation.yaml"
SEPARATOR = "@"
KEYS = ("effort", "thinking", "max_tokens", "temperature", "top_p", "api")
# Which OpenAI API a model is called through: chat completions, or the Responses API (OpenAI's
# own, recommended for its reasoning models; llm.engine.providers.openai_responses).
APIS = ("chat", "responses")
MIN_THINKING_BUDGET = 1024
# Claude's output limit when neither the role nor the settings give one (it must be set).
DEFAULT_MAX_TOKENS = 4096


class SettingsError(ValueError):
    """Settings a model string cannot carry, in words for the person who wrote them."""


@dataclass(frozen=True)
class GenerationSettings:
    effort: str | None = None
    # An int: a thinking budget in tokens (Claude). A bool: the thinking switch (Qwen3).
    thinking: int | bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    api: str | None = None

    def given(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }

    def over(self, other: GenerationSettings) -> GenerationSettings:
        """These settings, with `other`'s filling what these leave open."""
        return replace(other, **self.given())

    def label(self) -> str:
        """How reports name the settings: "effort high, thinking 8000 tokens"."""
        parts = []
        for name, value in self.given().items():
            if name == "thinking":
                value = _thinking_label(value)
            parts.append(f"{name.replace('_', ' ')} {value}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Family:
    name: str
    match: tuple[str, ...]
    efforts: tuple[str, ...] = ()
    thinking: str = ""  # "budget", "switch" or "" (takes none)
    sampling: bool = True
    # Whether the provider constrains the answer to a JSON schema for this family.
    structured_output: bool = False
    # Whether the family's calls carry a sampling seed (llm.engine.seeds): false where the
    # provider takes none (Claude) or it would mean nothing (the offline scripts).
    seed: bool = True
    defaults: GenerationSettings = field(default_factory=GenerationSettings)

    def matches(self, base_model: str) -> bool:
        return any(fnmatchcase(base_model, pattern) for pattern in self.match)


def split_model(model: str) -> tuple[str, str]:
    """(the model string without settings, the settings text after the "@", or "")."""
    base, _, settings = model.partition(SEPARATOR)
    return base, settings


def base_model(model: str) -> str:
    return split_model(model)[0]


def parse_settings(text: str) -> GenerationSettings:
    """`effort=high,max_tokens=16000` as settings; a malformed pair raises SettingsError."""
    values: dict[str, Any] = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        key, equals, raw = (piece.strip() for piece in pair.partition("="))
        if not equals or not raw:
            raise SettingsError(f"{pair!r} is not key=value (keys: {', '.join(KEYS)})")
        if key not in KEYS:
            raise SettingsError(f"unknown setting {key!r}; the settings are {', '.join(KEYS)}")
        if key in values:
            raise SettingsError(f"{key} is given twice")
        values[key] = _value(key, raw)
    return GenerationSettings(**values)


def _value(key: str, raw: str) -> Any:
    if key == "effort":
        return raw
    if key == "api":
        if raw not in APIS:
            raise SettingsError(f"api must be one of {', '.join(APIS)}, not {raw!r}")
        return raw
    if key == "thinking" and raw in ("on", "off"):
        return raw == "on"
    number = _number(key, raw)
    if key in ("thinking", "max_tokens"):
        if number != int(number) or number < 1:
            raise SettingsError(f"{key} must be a whole number of tokens, not {raw!r}")
        return int(number)
    limit = 2.0 if key == "temperature" else 1.0
    if not 0 <= number <= limit:
        raise SettingsError(f"{key} must be between 0 and {limit:g}, not {raw}")
    return number


def _number(key: str, raw: str) -> float:
    hint = " (or on / off)" if key == "thinking" else ""
    try:
        number = float(raw)
    except ValueError:
        raise SettingsError(f"{key} must be a number{hint}, not {raw!r}") from None
    if not math.isfinite(number):
        raise SettingsError(f"{key} must be a finite number{hint}, not {raw!r}")
    return number


@functools.cache
def families(path: Path = GENERATION_PATH) -> tuple[Family, ...]:
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    return tuple(_family(raw) for raw in data["families"])


def _family(raw: dict[str, Any]) -> Family:
    defaults = ",".join(f"{key}={value}" for key, value in (raw.get("defaults") or {}).items())
    return Family(
        name=raw["name"],
        match=tuple(raw["match"]),
        efforts=tuple(raw.get("efforts") or ()),
        thinking=raw.get("thinking") or "",
        sampling=raw.get("sampling", True),
        structured_output=raw.get("structured_output", False),
        seed=raw.get("seed", True),
        defaults=parse_settings(defaults),
    )


def family_of(model: str) -> Family:
    base = base_model(model)
    for family in families():
        if family.matches(base):
            return family
    raise SettingsError(f"no model family in {GENERATION_PATH.name} matches {base!r}")


def settings_of(model: str) -> GenerationSettings:
    """The model string's own settings over its family's defaults; SettingsError when they
    break the family's rules."""
    problems = settings_problems(model)
    if problems:
        raise SettingsError(f"{model}: " + "; ".join(problems))
    family = family_of(model)
    return parse_settings(split_model(model)[1]).over(family.defaults)


def settings_problems(model: str) -> list[str]:
    """Why the settings of `model` cannot be sent, each in words ([] when they can)."""
    base, text = split_model(model)
    if SEPARATOR in model and not text.strip(" ,"):
        return [f"nothing follows the {SEPARATOR!r} in {model!r}: give settings or leave it out"]
    try:
        own = parse_settings(text)
        family = family_of(model)
    except SettingsError as error:
        return [str(error)]
    wanted = own.over(family.defaults)
    return [
        *_api_problems(base, wanted),
        *_effort_problems(base, family, wanted),
        *_thinking_problems(base, family, wanted),
        *_sampling_problems(base, family, wanted),
    ]


def _api_problems(base: str, settings: GenerationSettings) -> list[str]:
    if settings.api == "responses" and not base.startswith("openai/"):
        return [f"{base} is not an OpenAI model: only openai/ models take api=responses"]
    return []


def _effort_problems(base: str, family: Family, settings: GenerationSettings) -> list[str]:
    if settings.effort is None:
        return []
    if not family.efforts:
        return [f"{base} takes no reasoning effort (model family: {family.name})"]
    if settings.effort not in family.efforts:
        return [f"effort {settings.effort!r} is none of {', '.join(family.efforts)}"]
    return []


def _thinking_problems(base: str, family: Family, settings: GenerationSettings) -> list[str]:
    thinking = settings.thinking
    if thinking is None or thinking is False and family.thinking:
        return []
    if family.thinking == "switch":
        return (
            [] if isinstance(thinking, bool) else [f"{base} takes thinking=on or off, not a budget"]
        )
    if family.thinking != "budget":
        return [f"{base} has no thinking setting (model family: {family.name})"]
    if thinking is True:
        return [f"{base} takes a thinking budget in tokens (thinking=8000), or off"]
    if thinking < MIN_THINKING_BUDGET:
        return [f"a thinking budget is at least {MIN_THINKING_BUDGET} tokens, not {thinking}"]
    # Without a max_tokens of its own, the limit is the budget plus the role's (see apply).
    limit = settings.max_tokens
    if limit is not None and thinking >= limit:
        return [
            f"the thinking budget ({thinking}) must be below the output limit (max_tokens={limit})"
        ]
    return []


def _sampling_problems(base: str, family: Family, settings: GenerationSettings) -> list[str]:
    custom = [name for name in ("temperature", "top_p") if getattr(settings, name) is not None]
    if not custom:
        return []
    if not family.sampling:
        return [f"{base} refuses a custom {' or '.join(custom)} (model family: {family.name})"]
    if not takes_sampling(settings, family):
        return [f"{' and '.join(custom)} cannot be set while {base} thinks"]
    return []


def takes_sampling(settings: GenerationSettings, family: Family) -> bool:
    """Whether temperature and top_p reach the model: its family takes them and it is not
    thinking on a budget (Claude fixes them while it thinks)."""
    return family.sampling and _budget(settings.thinking) is None


def model_takes_sampling(model: str) -> bool:
    """takes_sampling for a model string; False for settings it refuses (nothing is sent)."""
    try:
        return takes_sampling(settings_of(model), family_of(model))
    except SettingsError:
        return False


def apply(request: Any, settings: GenerationSettings, family: Family) -> Any:
    """`request` (a ChatRequest) with the effective settings: the model's own, then the role's
    own preferences where the model takes them."""
    thinking_budget = _budget(settings.thinking)
    sampling_allowed = takes_sampling(settings, family)
    max_tokens = settings.max_tokens or request.max_tokens
    if thinking_budget is not None:
        # The output limit counts the thinking: a role's own limit is for the answer alone.
        max_tokens = settings.max_tokens or thinking_budget + (
            request.max_tokens or DEFAULT_MAX_TOKENS
        )
    return replace(
        request,
        max_tokens=max_tokens,
        temperature=_sampled(settings.temperature, request.temperature, sampling_allowed),
        top_p=_sampled(settings.top_p, request.top_p, sampling_allowed),
        reasoning_effort=settings.effort,
        thinking_budget=thinking_budget,
        thinking_switch=settings.thinking if isinstance(settings.thinking, bool) else None,
        json_schema=request.json_schema if family.structured_output else None,
        seed=_seed(request) if takes_seed(settings, family) else None,
    )


def _seed(request: Any) -> int | None:
    """The request's own seed, else the one its sample and purpose give (llm.engine.seeds)."""
    return (
        request.seed if request.seed is not None else provider_seed(request.sample, request.purpose)
    )


def takes_seed(settings: GenerationSettings, family: Family) -> bool:
    """Whether a call carries its seed: its family takes one, through chat completions (the
    Responses API has no seed parameter)."""
    return family.seed and settings.api != "responses"


def _budget(thinking: int | bool | None) -> int | None:
    return thinking if isinstance(thinking, int) and not isinstance(thinking, bool) else None


def _sampled(own: float | None, role: float | None, allowed: bool) -> float | None:
    return (own if own is not None else role) if allowed else None


def _thinking_label(value: int | bool) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value} tokens"


def model_label(model: str) -> str:
    """ "openai/gpt-5.5@effort=high" as reports name it: "openai/gpt-5.5, effort high"."""
    base, text = split_model(model)
    if not text:
        return model
    try:
        return f"{base}, {parse_settings(text).label()}"
    except SettingsError:
        return model
