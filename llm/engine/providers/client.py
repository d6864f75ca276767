"""ModelClient: one model string behind rate limit, retries, cache and cost accounting.

Thread-safe: a client holds no per-call state, and its SDK client, cache store and rate
limiter are all safe to share, so many worker threads can call one client at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol
from urllib.parse import urlparse

from llm.engine import generation
from llm.engine.chat import ChatRequest, ChatResponse, ProviderError, Usage
from llm.engine.providers import cache, endpoints
from llm.engine.providers.batches import (
    Adoption,
    BatchProvider,
    BatchReceipt,
    BatchResult,
    BatchStatus,
    OfflineBatchProvider,
    Uploaded,
)
from llm.engine.providers.catalog import ModelCatalog, RateLimit, default_catalog
from llm.engine.providers.endpoints import Endpoint
from llm.engine.providers.model_strings import ModelString, parse_model_string
from llm.engine.providers.offline import OfflineProvider
from llm.engine.providers.rate_limit import (
    InProcessRateLimiter,
    RateLimiter,
    RedisRateLimiter,
)
from llm.engine.providers.retry import RetryPolicy, call_with_retries
from llm.engine.providers.settings import ProviderSettings

logger = logging.getLogger("llm.cache")

# Local OpenAI-compatible servers usually need no key, but the SDK refuses an empty one.
_NO_KEY_NEEDED = "not-needed"


class Provider(Protocol):
    def chat(self, request: ChatRequest) -> ChatResponse: ...


class ModelClient:
    def __init__(
        self,
        model_string: str,
        *,
        settings: ProviderSettings,
        cache_store: cache.CacheStore | None = None,
        use_cache: bool = True,
        rate_limiter: RateLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        catalog: ModelCatalog | None = None,
    ):
        self.model_string = model_string
        self.model = parse_model_string(model_string)
        # The model string's generation settings over its family's defaults, checked here
        # too: a client is never built for settings its model refuses.
        try:
            self.generation = generation.settings_of(model_string)
        except generation.SettingsError as error:
            raise ProviderError(str(error), kind="config") from None
        self.family = generation.family_of(model_string)
        self._provider = build_provider(self.model, settings, api=self.generation.api)
        self.timeout_seconds = settings.timeout_seconds
        self._batch_provider: BatchProvider | None = None
        self.base_url: str = getattr(self._provider, "base_url", "")
        catalog = catalog or default_catalog()
        self.price = catalog.price_for(model_string)
        self.limit = (
            catalog.limit_for(model_string) if limits_apply(self.model, settings) else RateLimit()
        )
        endpoint = settings.endpoint_set().get(self.model.provider)
        # A named endpoint's own limit covers every model on that server (one shared key);
        # a catalog entry for the exact model string is the model's own and wins.
        self._limit_key = generation.base_model(model_string)
        if endpoint is not None and self.limit.unlimited and not endpoint.limit.unlimited:
            self.limit, self._limit_key = endpoint.limit, f"endpoint:{endpoint.name}"
        self._slots = endpoints.concurrency_slot(endpoint) if endpoint else None
        self._cache_store = cache_store if use_cache else None
        self._rate_limiter = (
            None
            if self.limit.unlimited
            else rate_limiter or shared_rate_limiter(settings.redis_url)
        )
        self._retry = RetryPolicy(
            max_retries=settings.max_retries, sleep=sleep, rng=rng or random.Random()
        )

    def chat(self, request: ChatRequest) -> ChatResponse:
        self._model_check(request)
        request = self.effective(request)
        key = self._cache_key(request)
        if key is not None:
            stored = self._cache_store.get(key)
            if stored is not None:
                return cache.response_from_json(stored)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("cache miss: %s", self.explain_key(request))
        response, retries = call_with_retries(
            lambda: self._call_once(request), self._retry, label=self.model_string
        )
        response = replace(
            response,
            cost_usd=self.cost(response.usage),
            list_cost_usd=self.price.list_cost(response.usage) if self.price else None,
            cached=False,
            retries=retries,
            seed=request.seed,
        )
        if key is not None:
            self._cache_store.set(key, cache.response_to_json(response))
        return response

    # --- batches (llm.engine.providers.batches): the same requests, at the batch price ---

    def cached_answer(self, request: ChatRequest) -> ChatResponse | None:
        """The response cache's answer to `request` (marked cached, free), or None: a batch
        sends only what the cache cannot answer."""
        return self.receipt_answer(self.batch_receipt(request))

    def batch_receipt(self, request: ChatRequest, note: str = "") -> BatchReceipt:
        """What reading `request`'s batch answer will need of it (BatchReceipt)."""
        effective = self.effective(request)
        return BatchReceipt(self._cache_key(effective), effective.seed, note)

    def receipt_answer(self, receipt: BatchReceipt) -> ChatResponse | None:
        """The response cache's answer to the request `receipt` was made of, or None."""
        key = receipt.cache_key
        store = self._cache_store
        stored = store.get(key) if key is not None and store is not None else None
        return cache.response_from_json(stored) if stored is not None else None

    def receipt_forget(self, receipt: BatchReceipt) -> None:
        """`forget` for the request `receipt` was made of."""
        if receipt.cache_key is not None and self._cache_store is not None:
            self._cache_store.delete(receipt.cache_key)

    def batch_submit(
        self,
        requests: Sequence[tuple[str, ChatRequest]],
        *,
        tag: str = "",
        uploaded: Uploaded | None = None,
    ) -> str:
        """Send (custom id, request) pairs as one batch; returns the provider's batch id.
        `tag` and `uploaded`: how the batch is found again (BatchProvider.find)."""
        for _, request in requests:
            self._model_check(request)
        effective = [(custom_id, self.effective(request)) for custom_id, request in requests]
        return self._batches().submit(effective, tag=tag, uploaded=uploaded)

    def batch_find(
        self,
        tag: str,
        *,
        since: datetime,
        until: datetime | None = None,
        input_file_id: str = "",
    ) -> Adoption:
        return self._batches().find(tag, since=since, until=until, input_file_id=input_file_id)

    def batch_submit_seconds(self) -> float:
        """How long a `batch_submit` may take: OpenAI's is two calls (the upload, then the
        create), each allowed the timeout; Anthropic's is one."""
        return 2 * self.timeout_seconds

    def batch_status(self, batch_id: str) -> BatchStatus:
        return self._batches().status(batch_id)

    def batch_results(
        self,
        batch_id: str,
        requests: Mapping[str, ChatRequest],
        receipts: Mapping[str, BatchReceipt] | None = None,
    ) -> Iterator[BatchResult]:
        """The ended batch's outcomes for `requests` (by custom id), each answer priced at the
        batch price and stored in the response cache, so a re-score is answered from it.
        With the `receipts` kept when the batch was sent, a request is read (its values
        built) only by a provider that `reads_requests`."""
        provider = self._batches()
        if receipts is None:
            receipts = {custom_id: self.batch_receipt(r) for custom_id, r in requests.items()}
        if provider.reads_requests:
            requests = {custom_id: self.effective(r) for custom_id, r in requests.items()}
        for result in provider.results(batch_id, requests):
            if result.custom_id not in receipts:
                continue  # its unit is gone (the batch's receipts were made from its requests)
            if result.response is None:
                yield result
                continue
            receipt = receipts[result.custom_id]
            response = replace(
                result.response,
                cost_usd=self.price.batch_cost(result.response.usage) if self.price else None,
                list_cost_usd=self.price.list_cost(result.response.usage) if self.price else None,
                cached=False,
                seed=receipt.seed,
            )
            if receipt.cache_key is not None and self._cache_store is not None:
                self._cache_store.set(receipt.cache_key, cache.response_to_json(response))
            yield replace(result, response=response)

    def _batches(self) -> BatchProvider:
        if self._batch_provider is None:
            self._batch_provider = batch_provider_of(self.model, self._provider, self.model_string)
        return self._batch_provider

    def _model_check(self, request: ChatRequest) -> None:
        if request.model != self.model_string:
            raise ProviderError(
                f"a client for {self.model_string} was asked to call {request.model}",
                kind="config",
            )

    def forget(self, request: ChatRequest) -> None:
        """Drop the cached answer to `request`: its caller found it unusable, and a retry must
        ask the model again rather than replay the same bad answer."""
        self.receipt_forget(self.batch_receipt(request))

    def effective(self, request: ChatRequest) -> ChatRequest:
        """`request` with this model's generation settings applied (llm.engine.generation)."""
        return generation.apply(request, self.generation, self.family)

    def cost(self, usage: Usage) -> Decimal | None:
        return self.price.cost(usage) if self.price else None

    def explain_key(self, request: ChatRequest) -> dict[str, Any]:
        return cache.explain_key(request, provider=self.model.provider, base_url=self.base_url)

    def _cache_key(self, request: ChatRequest) -> str | None:
        if self._cache_store is None:
            return None
        return cache.cache_key(request, provider=self.model.provider, base_url=self.base_url)

    def _call_once(self, request: ChatRequest) -> ChatResponse:
        if self._rate_limiter is None:
            return self._capped_call(request)
        reservation = self._rate_limiter.acquire(
            self._limit_key, self.limit, estimate_tokens(request)
        )
        # A failed call keeps its reservation: the provider counted the request all the same.
        response = self._capped_call(request)
        self._rate_limiter.settle(reservation, response.usage.total)
        return response

    def _capped_call(self, request: ChatRequest) -> ChatResponse:
        """The call, within the endpoint's concurrency cap when it has one."""
        if self._slots is None:
            return self._provider.chat(request)
        with self._slots:
            return self._provider.chat(request)


# The hosts whose account limits the catalog's openai/ and anthropic/ entries describe.
VENDOR_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


def limits_apply(model: ModelString, settings: ProviderSettings) -> bool:
    """Whether the catalog's rate limit for `model` holds its calls. An openai/ or anthropic/
    entry states the vendor's account limits, so it holds calls to the vendor's own API only:
    with OPENAI_BASE_URL / ANTHROPIC_BASE_URL pointing elsewhere (a local or test server
    speaking the vendor's format, a gateway with limits of its own) the calls are not held to
    them - that server answers 429 when it must, and the client honours its Retry-After. An
    openai-compatible/ entry is written for the configured server and always holds."""
    base_url = {"openai": settings.openai_base_url, "anthropic": settings.anthropic_base_url}
    if model.provider not in VENDOR_HOSTS or not base_url[model.provider]:
        return True
    return urlparse(base_url[model.provider]).hostname == VENDOR_HOSTS[model.provider]


def estimate_tokens(request: ChatRequest) -> int:
    """A rough count (4 characters a token) reserved before the call, settled after it."""
    characters = len(request.system) + sum(
        len(message.content) + sum(len(call.arguments) for call in message.tool_calls)
        for message in request.messages
    )
    characters += sum(len(tool.description) + len(str(tool.parameters)) for tool in request.tools)
    return characters // 4 + (request.max_tokens or 0)


OPENAI_ADAPTER = "llm.engine.providers.openai_chat"
ANTHROPIC_ADAPTER = "llm.engine.providers.anthropic_chat"
# Both SDKs speak HTTP through httpx2, which imports its transport (httpcore2) only when the
# first SDK client is made: in a worker, during its first conversation's first call.
SDK_TRANSPORT = "httpcore2"


def adapters_configured(settings: ProviderSettings) -> tuple[str, ...]:
    """The SDK adapters this process has credentials for, so may call (see adapters_import)."""
    adapters = []
    openai_keys = (settings.openai_api_key, settings.openai_compatible_base_url)
    if any(openai_keys) or any(settings.endpoint_keys.values()):
        adapters.append(OPENAI_ADAPTER)
    if settings.anthropic_api_key:
        adapters.append(ANTHROPIC_ADAPTER)
    return tuple(adapters)


def adapters_import(settings: ProviderSettings) -> tuple[str, ...]:
    """Import the adapters (and their SDKs) the process may call, while a worker starts.

    Imported lazily, an SDK costs its first task a second or two of CPU - and under 24
    threads every other task waits for the interpreter lock meanwhile. A worker with no
    credentials (offline runs, most tests) imports none. The SDKs' transport is imported
    with them, for the same reason (a tenth of a second of CPU per worker)."""
    adapters = adapters_configured(settings)
    for adapter in adapters:
        importlib.import_module(adapter)
    if adapters and importlib.util.find_spec(SDK_TRANSPORT) is not None:  # older SDKs: httpx
        importlib.import_module(SDK_TRANSPORT)
    return adapters


def build_provider(
    model: ModelString, settings: ProviderSettings, *, api: str | None = None
) -> Provider:
    # The SDKs are imported here, not at the top: they take seconds to import, and offline
    # runs and the tests of every other module never need them (a worker with credentials
    # imports them while it starts: adapters_import).
    if model.provider == "offline":
        return OfflineProvider(model.name, settings.offline_latency_seconds)
    if model.provider == "anthropic":
        from llm.engine.providers.anthropic_chat import AnthropicChatProvider

        return AnthropicChatProvider(
            model_name=model.name,
            api_key=_required(settings.anthropic_api_key, "ANTHROPIC_API_KEY", model),
            base_url=settings.anthropic_base_url,
            timeout_seconds=settings.timeout_seconds,
        )
    from llm.engine.providers.openai_chat import OpenAIChatProvider

    endpoint = settings.endpoint_set().get(model.provider)
    if endpoint is not None:
        return OpenAIChatProvider(
            model_name=model.name,
            api_key=_endpoint_key(endpoint, settings, model),
            base_url=endpoint.base_url,
            timeout_seconds=settings.timeout_seconds,
            max_tokens_field="max_tokens",
        )
    if model.provider == "openai" and api == "responses":
        from llm.engine.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(
            model_name=model.name,
            api_key=_required(settings.openai_api_key, "OPENAI_API_KEY", model),
            base_url=settings.openai_base_url,
            timeout_seconds=settings.timeout_seconds,
        )
    if model.provider == "openai":
        return OpenAIChatProvider(
            model_name=model.name,
            api_key=_required(settings.openai_api_key, "OPENAI_API_KEY", model),
            base_url=settings.openai_base_url,
            timeout_seconds=settings.timeout_seconds,
        )
    return OpenAIChatProvider(
        model_name=model.name,
        api_key=settings.openai_compatible_api_key or _NO_KEY_NEEDED,
        base_url=_required(
            settings.openai_compatible_base_url, "OPENAI_COMPATIBLE_BASE_URL", model
        ),
        timeout_seconds=settings.timeout_seconds,
        max_tokens_field="max_tokens",
    )


def batch_provider_of(model: ModelString, provider: Provider, model_string: str) -> BatchProvider:
    """The batch API beside a model's live adapter: OpenAI's (chat completions or Responses,
    as the model string routes it), Anthropic's, or the offline scripts'; `model_string` is
    what their answers name as the model. Named endpoints and OpenAI-compatible servers have
    none."""
    if model.provider == "offline":
        return OfflineBatchProvider(model.name)
    if model.provider == "anthropic":
        from llm.engine.providers.anthropic_batch import AnthropicBatchProvider

        return AnthropicBatchProvider(provider, model_string)
    if model.provider == "openai":
        from llm.engine.providers.openai_batch import OpenAIBatchProvider

        return OpenAIBatchProvider(provider, model_string)
    raise ProviderError(
        f"{model} has no batch API: only openai/, anthropic/ and offline/ models are sent "
        "in batches",
        kind="config",
    )


def batch_capable(model_string: str) -> bool:
    return parse_model_string(model_string).provider in BATCH_PROVIDERS


BATCH_PROVIDERS = ("openai", "anthropic", "offline")


def sends_sampling(model_string: str) -> bool:
    """Whether temperature and top_p set on a request reach the model: not for the offline
    scripts (they ignore both), nor through an Anthropic SDK that has no such arguments (its
    API version refuses them), nor to a model whose generation settings drop them (a reasoning
    model, a thinking Claude: generation.apply)."""
    provider = parse_model_string(model_string).provider
    if provider == "offline":
        return False
    if provider == "anthropic":
        from llm.engine.providers.anthropic_chat import SENDS_SAMPLING

        if not SENDS_SAMPLING:
            return False
    return generation.model_takes_sampling(model_string)


def _endpoint_key(endpoint: Endpoint, settings: ProviderSettings, model: ModelString) -> str:
    if not endpoint.api_key_env:
        return _NO_KEY_NEEDED
    refusal = endpoints.key_variable_refusal(endpoint.api_key_env, settings.site_variables)
    if refusal is not None:
        raise ProviderError(f"endpoint {endpoint.name!r}: api_key_env {refusal}", kind="config")
    key = settings.endpoint_keys.get(endpoint.name, "")
    if not key:
        raise ProviderError(
            f"endpoint {endpoint.name!r} takes its key from the environment variable "
            f"{endpoint.api_key_env}, which is not set; it is needed to call {model}",
            kind="config",
        )
    return key


def _required(value: str, variable: str, model: ModelString) -> str:
    if not value:
        raise ProviderError(f"{variable} is not set; it is needed to call {model}", kind="config")
    return value


_shared_limiters: dict[str, RateLimiter] = {}
_shared_limiters_lock = threading.Lock()


def shared_rate_limiter(redis_url: str) -> RateLimiter:
    """One limiter per process and Redis URL, so every client of a model shares its limit."""
    with _shared_limiters_lock:
        if redis_url not in _shared_limiters:
            _shared_limiters[redis_url] = (
                RedisRateLimiter.from_url(redis_url) if redis_url else InProcessRateLimiter()
            )
        return _shared_limiters[redis_url]
