"""Where provider keys, base URLs and call limits come from: Django settings or explicit values.

Nothing here is ever logged; the key fields are hidden from repr so that a settings object
printed in a traceback does not leak them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm.engine.providers import endpoints as named


@dataclass(frozen=True)
class ProviderSettings:
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    openai_compatible_base_url: str = ""
    openai_compatible_api_key: str = field(default="", repr=False)
    timeout_seconds: float = 120.0
    max_retries: int = 6
    # How long each offline scripted answer takes (seconds); see OfflineProvider.
    offline_latency_seconds: float = 0.0
    # Redis URL for the rate limiter shared by all workers; empty means per-process limits.
    redis_url: str = field(default="", repr=False)
    # Named OpenAI-compatible endpoints (None: those in force) and the keys their environment
    # variables hold, by endpoint name.
    endpoints: named.EndpointSet | None = None
    endpoint_keys: dict[str, str] = field(default_factory=dict, repr=False)
    # The variables the site reads for itself: never an endpoint's key (key_variable_refusal).
    site_variables: frozenset[str] = frozenset()

    def secrets(self) -> tuple[str, ...]:
        """The configured keys, for redaction: removed from any text that quotes them."""
        keys = (self.openai_api_key, self.anthropic_api_key, self.openai_compatible_api_key)
        return tuple(key for key in (*keys, *self.endpoint_keys.values()) if key)

    def endpoint_set(self) -> named.EndpointSet:
        return self.endpoints if self.endpoints is not None else named.in_force()


def endpoint_keys(
    endpoint_set: named.EndpointSet, environment, site_variables: frozenset[str]
) -> dict[str, str]:
    """Each endpoint's key, from the environment variable it names ("" when unset). A variable
    an endpoint may not name is never read (its calls fail, client._endpoint_key)."""
    return {
        e.name: environment.get(e.api_key_env, "")
        for e in endpoint_set
        if e.api_key_env and named.key_variable_refusal(e.api_key_env, site_variables) is None
    }
