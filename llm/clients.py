"""Model clients as the site runs them: provider keys and limits from Django's settings,
answers cached in the Django cache named "llm", prices in force from the database.

The engine (llm.engine) is pure Python and takes all of this as arguments; this module is
where Django supplies it. Callers use `model_router` (a task's router, priced now),
`build_client` or `ModelRouter`.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

from django.core.cache import caches

from llm.configured import provider_settings
from llm.engine.chat import ChatRequest, ChatResponse
from llm.engine.providers.cache import UNREACHABLE, CacheStore
from llm.engine.providers.client import ModelClient
from llm.engine.providers.settings import ProviderSettings
from llm.services import prices

logger = logging.getLogger(__name__)


class DjangoCacheStore:
    """Stores entries in the Django cache named `alias`, with no expiry.

    The cache saves money; no answer depends on it. While its store is unreachable (Redis
    stopped), a read is a miss and a write is skipped, so work goes on instead of failing."""

    def __init__(self, alias: str = "llm"):
        self.alias = alias

    def get(self, key: str) -> str | None:
        try:
            return self._cache().get(key)
        except UNREACHABLE as error:
            logger.warning("response cache unreachable, asking the model: %s", error)
            return None

    def set(self, key: str, value: str) -> None:
        try:
            self._cache().set(key, value, timeout=None)
        except UNREACHABLE as error:
            logger.warning("response cache unreachable, answer not stored: %s", error)

    def delete(self, key: str) -> None:
        try:
            self._cache().delete(key)
        except UNREACHABLE as error:
            logger.warning("response cache unreachable, answer not forgotten: %s", error)

    def _cache(self) -> Any:
        return caches[self.alias]


def build_client(
    model_string: str,
    *,
    settings: ProviderSettings | None = None,
    use_cache: bool = True,
    cache_store: CacheStore | None = None,
    **options: Any,
) -> ModelClient:
    """A client configured from Django settings, caching in the Django cache named "llm"."""
    if use_cache and cache_store is None:
        cache_store = DjangoCacheStore()
    return ModelClient(
        model_string,
        settings=settings or provider_settings(),
        cache_store=cache_store,
        use_cache=use_cache,
        **options,
    )


class ModelRouter:
    """A chat client for every model string: each request goes to the client for its model.

    Code that talks to several models through one `client` argument (the conversation loop,
    roster generation, the jury) takes a router; clients are built on first use.
    """

    def __init__(self, **client_options: Any):
        self._options = client_options
        self._clients: dict[str, ModelClient] = {}
        self._lock = threading.Lock()

    def client_for(self, model_string: str) -> ModelClient:
        # Read without the lock once built: every model call of every thread passes here, and
        # a dict read is atomic; the lock only keeps two threads from building one client.
        client = self._clients.get(model_string)
        if client is not None:
            return client
        with self._lock:
            if model_string not in self._clients:
                self._clients[model_string] = build_client(model_string, **self._options)
            return self._clients[model_string]

    def chat(self, request: ChatRequest) -> ChatResponse:
        return self.client_for(request.model).chat(request)

    def forget(self, request: ChatRequest) -> None:
        self.client_for(request.model).forget(request)


def model_router(use_cache: bool, *, overrides: prices.Overrides | None = None) -> ModelRouter:
    """The router for a task: clients priced with the prices in force now (read once per task,
    so a price set while workers run applies to the next task, with no restart). A task that
    read them already (`prices.price_overrides_as_of`) passes them as `overrides`."""
    return _router(use_cache, prices.price_overrides() if overrides is None else overrides)


@lru_cache(maxsize=4)
def _router(use_cache: bool, overrides: prices.Overrides) -> ModelRouter:
    # One router per process, cache flag and prices, so every thread shares its clients; rate
    # limits are shared by every router of the process (providers.client.shared_rate_limiter).
    return ModelRouter(use_cache=use_cache, catalog=prices.catalog_with(overrides))


model_router.cache_clear = _router.cache_clear  # tests start from fresh clients
