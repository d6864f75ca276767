"""Model strings name a provider and a model: `openai/gpt-5.5`, `offline/careful`, or a named
endpoint (llm.engine.providers.endpoints) and a model on it: `vllm-a/llama-3.3-70b`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from llm.engine import generation
from llm.engine.chat import ProviderError
from llm.engine.providers import endpoints
from llm.engine.providers.offline import SCRIPTS

PROVIDERS = ("openai", "anthropic", "openai-compatible", "offline")


@dataclass(frozen=True)
class ModelString:
    provider: str
    name: str  # may itself hold slashes, e.g. openai-compatible/meta-llama/Llama-3.1-8B
    # Generation settings after the "@" (llm.engine.generation), "" when none.
    settings: str = ""

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"

    @property
    def is_endpoint(self) -> bool:
        return self.provider not in PROVIDERS


def parse_model_string(model: str) -> ModelString:
    base, settings = generation.split_model(model)
    provider, slash, name = base.partition("/")
    known = (*PROVIDERS, *endpoints.in_force().names)
    expected = ", ".join(f"{p}/<model>" for p in known)
    if not slash or not name:
        raise ProviderError(
            f"model string {model!r} has no model name; expected one of {expected}",
            kind="config",
        )
    if provider not in known:
        raise ProviderError(
            f"unknown provider {provider!r} in model string {model!r}; expected one of {expected}",
            kind="config",
        )
    return ModelString(provider, name, settings)


def offline_behaviours(purpose: str) -> tuple[str, ...] | None:
    """The behaviours the offline script for `purpose` plays, as that script declares them in
    its BEHAVIOURS; None when the script plays every behaviour alike."""
    module_name, _ = SCRIPTS[purpose].split(":")
    return getattr(importlib.import_module(module_name), "BEHAVIOURS", None)


def check_model_string(model: str, *, purpose: str) -> ModelString:
    """Parse `model` for a role (a key of the offline provider's SCRIPTS); an offline model
    must name a behaviour the offline script for that role plays."""
    parsed = parse_model_string(model)
    known = offline_behaviours(purpose) if parsed.provider == "offline" else None
    if known is not None and parsed.name not in known:
        valid = ", ".join(f"offline/{behaviour}" for behaviour in known)
        raise ProviderError(
            f"unknown offline behaviour {parsed.name!r} in {model!r} for the {purpose} role; "
            f"use one of {valid}",
            kind="config",
        )
    problems = generation.settings_problems(model)
    if problems:
        raise ProviderError(f"{model}: {'; '.join(problems)}", kind="config")
    return parsed
