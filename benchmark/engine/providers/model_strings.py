"""Model strings name a provider and a model: `openai/gpt-5.5`, `offline/careful`."""

from __future__ import annotations

from dataclasses import dataclass

from benchmark.engine.chat import ProviderError

PROVIDERS = ("openai", "anthropic", "openai-compatible", "offline")


@dataclass(frozen=True)
class ModelString:
    provider: str
    name: str  # may itself hold slashes, e.g. openai-compatible/meta-llama/Llama-3.1-8B

    def __str__(self) -> str:
        return f"{self.provider}/{self.name}"


def parse_model_string(model: str) -> ModelString:
    provider, slash, name = model.partition("/")
    expected = ", ".join(f"{p}/<model>" for p in PROVIDERS)
    if not slash or not name:
        raise ProviderError(
            f"model string {model!r} has no model name; expected one of {expected}",
            kind="config",
        )
    if provider not in PROVIDERS:
        raise ProviderError(
            f"unknown provider {provider!r} in model string {model!r}; expected one of {expected}",
            kind="config",
        )
    return ModelString(provider, name)
