"""Model providers behind one chat interface: OpenAI, Anthropic, OpenAI-compatible, offline.

Callers use build_client(model_string) or ModelRouter(); everything else is re-exported for
tests and for code that wires its own cache store or rate limiter.
"""

from benchmark.engine.providers.cache import CacheStore, DjangoCacheStore, InMemoryStore
from benchmark.engine.providers.catalog import (
    CatalogError,
    ModelCatalog,
    Price,
    RateLimit,
    default_catalog,
    load_catalog,
)
from benchmark.engine.providers.client import ModelClient, ModelRouter, build_client
from benchmark.engine.providers.model_strings import ModelString, parse_model_string
from benchmark.engine.providers.rate_limit import (
    InProcessRateLimiter,
    RateLimiter,
    RedisRateLimiter,
)
from benchmark.engine.providers.settings import ProviderSettings

__all__ = [
    "CacheStore",
    "CatalogError",
    "DjangoCacheStore",
    "InMemoryStore",
    "InProcessRateLimiter",
    "ModelCatalog",
    "ModelClient",
    "ModelRouter",
    "ModelString",
    "Price",
    "ProviderSettings",
    "RateLimit",
    "RateLimiter",
    "RedisRateLimiter",
    "build_client",
    "default_catalog",
    "load_catalog",
    "parse_model_string",
]
