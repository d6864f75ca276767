"""The site's model clients pointed at the local fake LLM server (tests/fakes/llm_server.py),
for tests that call models through the real OpenAI and Anthropic SDKs."""

import contextlib
from collections.abc import Iterator

from llm.clients import model_router

OPENAI_TEST_KEY = "sk-test-not-a-real-key"
ANTHROPIC_TEST_KEY = "sk-ant-test-not-a-real-key"


@contextlib.contextmanager
def sdks_served_by(server, settings, *, retries: int = 0) -> Iterator[object]:
    """Both SDKs' base URLs at `server`, with test keys and `retries` retries; the process's
    clients are built again on entering (they keep their base URL) and on leaving."""
    settings.OPENAI_BASE_URL = server.openai_base_url
    settings.OPENAI_API_KEY = OPENAI_TEST_KEY
    settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
    settings.ANTHROPIC_API_KEY = ANTHROPIC_TEST_KEY
    settings.LLM_MAX_RETRIES = retries
    model_router.cache_clear()
    try:
        yield server
    finally:
        model_router.cache_clear()
