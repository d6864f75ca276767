"""The catalog's openai/ and anthropic/ rate limits are the vendors' account limits: they hold
calls to the vendor's own API, not calls that OPENAI_BASE_URL / ANTHROPIC_BASE_URL send to
another server (a local fake answering in 50 ms was held to OpenAI's 200,000 tokens a minute,
and the lab's near-miss pairs waited a minute each)."""

import pytest

from llm.engine.providers import ModelClient, ProviderSettings
from llm.engine.providers.catalog import parse_catalog

CATALOG = parse_catalog(
    {
        "models": {
            "openai/gpt-4o-mini": {"tokens_per_minute": 200000},
            "anthropic/claude-haiku-4-5": {"requests_per_minute": 50},
            "openai-compatible/llama": {"requests_per_minute": 120},
        }
    }
)
KEYS = {"openai_api_key": "k", "anthropic_api_key": "k"}


def client(model: str, **settings) -> ModelClient:
    return ModelClient(model, settings=ProviderSettings(**KEYS, **settings), catalog=CATALOG)


@pytest.mark.parametrize(
    ("model", "urls"),
    [
        ("openai/gpt-4o-mini", {}),
        ("openai/gpt-4o-mini", {"openai_base_url": "https://api.openai.com/v1"}),
        ("anthropic/claude-haiku-4-5", {}),
        ("anthropic/claude-haiku-4-5", {"anthropic_base_url": "https://api.anthropic.com"}),
        ("openai-compatible/llama", {"openai_compatible_base_url": "http://127.0.0.1:8001/v1"}),
    ],
)
def test_the_vendors_limits_hold_calls_to_the_vendors_api(model, urls):
    limited = client(model, **urls)

    assert not limited.limit.unlimited and limited._rate_limiter is not None


@pytest.mark.parametrize(
    ("model", "urls"),
    [
        ("openai/gpt-4o-mini", {"openai_base_url": "http://127.0.0.1:8000/v1"}),
        ("anthropic/claude-haiku-4-5", {"anthropic_base_url": "http://fake-anthropic.test"}),
    ],
)
def test_calls_sent_to_another_server_are_not_held_to_the_vendors_limits(model, urls):
    elsewhere = client(model, **urls)

    assert elsewhere.limit.unlimited and elsewhere._rate_limiter is None
    assert elsewhere.price == CATALOG.price_for(model)  # the price still applies
