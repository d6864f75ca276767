"""The providers' settings as this site is configured: keys, base URLs and call limits from
Django's settings, each named endpoint's key from the environment.

Light on purpose (Django's settings and the engine only): the log redaction asks for the
keys in every process, before the apps are loaded.
"""

from __future__ import annotations

import os

from django.conf import settings

from llm.engine.providers import endpoints as named
from llm.engine.providers.settings import ProviderSettings, endpoint_keys


def provider_settings() -> ProviderSettings:
    """Keys, base URLs and call limits from Django's settings, endpoint keys from the
    environment."""

    def text(name: str) -> str:
        return getattr(settings, name, "") or ""

    site_variables = frozenset(settings.SITE_VARIABLES)

    return ProviderSettings(
        openai_api_key=text("OPENAI_API_KEY"),
        openai_base_url=text("OPENAI_BASE_URL"),
        anthropic_api_key=text("ANTHROPIC_API_KEY"),
        anthropic_base_url=text("ANTHROPIC_BASE_URL"),
        openai_compatible_base_url=text("OPENAI_COMPATIBLE_BASE_URL"),
        openai_compatible_api_key=text("OPENAI_COMPATIBLE_API_KEY"),
        timeout_seconds=float(getattr(settings, "LLM_TIMEOUT_SECONDS", 120)),
        max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 6)),
        offline_latency_seconds=int(getattr(settings, "OFFLINE_LATENCY_MS", 0)) / 1000,
        redis_url=text("REDIS_URL"),
        endpoints=(endpoint_set := named.in_force()),
        endpoint_keys=endpoint_keys(endpoint_set, os.environ, site_variables),
        site_variables=site_variables,
    )
