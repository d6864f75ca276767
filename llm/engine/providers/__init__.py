"""Model providers behind one chat interface: OpenAI, Anthropic, OpenAI-compatible, offline.

Pure Python: the site's clients, configured from Django (llm.clients: build_client, ModelRouter,
model_router), build on these. Re-exported for tests and for code that wires its own cache
store, settings or rate limiter.
"""

from llm.engine.providers.cache import CacheStore, InMemoryStore
from llm.engine.providers.catalog import (
    CatalogError,
    ModelCatalog,
    Price,
    RateLimit,
    default_catalog,
    load_catalog,
)
from llm.engine.providers.client import ModelClient
from llm.engine.providers.model_strings import ModelString, parse_model_string
from llm.engine.providers.rate_limit import (
    InProcessRateLimiter,
    RateLimiter,
    RedisRateLimiter,
)
from llm.engine.providers.settings import ProviderSettings

__all__ = [
    "CacheStore",
    "CatalogError",
    "InMemoryStore",
    "InProcessRateLimiter",
    "ModelCatalog",
    "ModelClient",
    "ModelString",
    "Price",
    "ProviderSettings",
    "RateLimit",
    "RateLimiter",
    "RedisRateLimiter",
    "default_catalog",
    "load_catalog",
    "parse_model_string",
]
