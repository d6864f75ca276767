"""Per-model prices and shared rate limits, loaded and validated from llm/data/prices.yaml.

The file is the default; prices set elsewhere (staff set them in the browser) are laid over it
with `ModelCatalog.with_prices`, so the engine never needs to know where a price came from.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from llm.engine.chat import Usage
from llm.engine.generation import base_model

PRICES_PATH = Path(__file__).resolve().parents[2] / "data" / "prices.yaml"

_MILLION = Decimal(1_000_000)
_PRICE_FIELDS = ("input_per_million", "output_per_million")
# Prompt-cache prices, optional: without them a cached token costs what any input token costs.
_CACHE_PRICE_FIELDS = ("cached_input_per_million", "cache_write_per_million")
# The share taken off every rate for a call sent through the provider's batch API (0.5: half
# the price). Optional: left out, a batch call costs what a live one costs.
_BATCH_FIELD = "batch_discount"
# The shortest prefix the provider caches for the model, in tokens (a vendor rule like the
# batch discount, so it rides with the price). Optional: left out, the usual 1,024.
_CACHE_MINIMUM_FIELD = "cache_min_tokens"
_LIMIT_FIELDS = ("requests_per_minute", "tokens_per_minute")


class CatalogError(ValueError):
    """The prices file is malformed; the message names the entry and the field."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens. A cache price of None means the plain input price: no discount
    on reads, no surcharge on writes."""

    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal | None = None
    cache_write_per_million: Decimal | None = None
    batch_discount: Decimal | None = None
    cache_min_tokens: int | None = None

    @property
    def cached_input_rate(self) -> Decimal:
        return _or(self.cached_input_per_million, self.input_per_million)

    @property
    def cache_write_rate(self) -> Decimal:
        return _or(self.cache_write_per_million, self.input_per_million)

    def cost(self, usage: Usage) -> Decimal:
        """What the call is billed: uncached input, cache reads and cache writes each at
        their own rate, and the output."""
        return (
            usage.uncached_input_tokens * self.input_per_million
            + usage.cached_input_tokens * self.cached_input_rate
            + usage.cache_write_tokens * self.cache_write_rate
            + usage.output_tokens * self.output_per_million
        ) / _MILLION

    def batch_cost(self, usage: Usage) -> Decimal:
        """What the call is billed when it went through the provider's batch API: `cost`
        less the batch discount (both discounts apply: the vendors stack them)."""
        return self.batched().cost(usage)

    def batched(self) -> Price:
        """This price as a batch call pays it: every rate less the batch discount."""
        kept = 1 - _or(self.batch_discount, Decimal(0))
        return Price(
            self.input_per_million * kept,
            self.output_per_million * kept,
            None if self.cached_input_per_million is None else self.cached_input_per_million * kept,
            None if self.cache_write_per_million is None else self.cache_write_per_million * kept,
            cache_min_tokens=self.cache_min_tokens,
        )

    def list_cost(self, usage: Usage) -> Decimal:
        """What the call would cost with no prompt caching: every input token at the input
        price. Reports set it beside `cost` to show what caching saved."""
        return (
            usage.input_tokens * self.input_per_million
            + usage.output_tokens * self.output_per_million
        ) / _MILLION


def _or(value: Decimal | None, default: Decimal) -> Decimal:
    return default if value is None else value


@dataclass(frozen=True)
class RateLimit:
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None

    @property
    def unlimited(self) -> bool:
        return self.requests_per_minute is None and self.tokens_per_minute is None


@dataclass(frozen=True)
class ModelEntry:
    price: Price | None
    limit: RateLimit


@dataclass(frozen=True)
class ModelCatalog:
    entries: dict[str, ModelEntry]  # file order matters for patterns

    def entry_for(self, model: str) -> ModelEntry | None:
        if model in self.entries:
            return self.entries[model]
        # A model's generation settings do not change its price or its rate limit: a price
        # set for the model string with its settings wins, else the model's own.
        model = base_model(model)
        if model in self.entries:
            return self.entries[model]
        for pattern, entry in self.entries.items():
            if fnmatchcase(model, pattern):
                return entry
        return None

    def price_for(self, model: str) -> Price | None:
        entry = self.entry_for(model)
        return entry.price if entry else None

    def limit_for(self, model: str) -> RateLimit:
        entry = self.entry_for(model)
        return entry.limit if entry else RateLimit()

    def unpriced(self, models: Iterable[str]) -> list[str]:
        """The models (each once, in the order given) this catalog has no price for."""
        return [model for model in dict.fromkeys(models) if self.price_for(model) is None]

    def with_prices(self, prices: Mapping[str, Price]) -> ModelCatalog:
        """This catalog with an exact price for each model of `prices`, winning over the entry
        or pattern that priced it before; the model keeps that entry's rate limit."""
        if not prices:
            return self
        entries = dict(self.entries)
        for model, price in prices.items():
            before = self.entry_for(model)
            # A price set without a batch discount or cache minimum keeps the file's: they are
            # the vendor's rules, not part of the per-token figures staff set.
            if before is not None and before.price is not None:
                price = _with_vendor_rules(price, before.price)
            entries[model] = ModelEntry(price, before.limit if before else RateLimit())
        return ModelCatalog(entries)


def _with_vendor_rules(price: Price, before: Price) -> Price:
    return replace(
        price,
        batch_discount=_or(price.batch_discount, before.batch_discount),
        cache_min_tokens=price.cache_min_tokens or before.cache_min_tokens,
    )


def load_catalog(path: Path = PRICES_PATH) -> ModelCatalog:
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    try:
        return parse_catalog(data)
    except CatalogError as error:
        raise CatalogError(f"{path}: {error}") from None


@functools.cache
def default_catalog() -> ModelCatalog:
    return load_catalog()


def parse_catalog(data: Any) -> ModelCatalog:
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise CatalogError("expected a top-level 'models' mapping")
    return ModelCatalog({str(key): _entry(str(key), raw) for key, raw in data["models"].items()})


def _entry(key: str, raw: Any) -> ModelEntry:
    if not isinstance(raw, dict):
        raise CatalogError(f"{key}: expected a mapping of fields")
    known = {*_PRICE_FIELDS, *_CACHE_PRICE_FIELDS, _BATCH_FIELD, _CACHE_MINIMUM_FIELD}
    known |= set(_LIMIT_FIELDS)
    unknown = set(raw) - known
    if unknown:
        raise CatalogError(f"{key}: unknown fields {sorted(unknown)}")
    given = [name for name in _PRICE_FIELDS if name in raw]
    if len(given) == 1:
        raise CatalogError(f"{key}: give both input_per_million and output_per_million")
    vendor_fields = (*_CACHE_PRICE_FIELDS, _BATCH_FIELD, _CACHE_MINIMUM_FIELD)
    cache_prices = [name for name in vendor_fields if name in raw]
    if cache_prices and not given:
        raise CatalogError(
            f"{key}: {cache_prices[0]} needs input_per_million and output_per_million"
        )
    amounts = {
        name: _amount(key, name, raw[name])
        for name in (*_PRICE_FIELDS, *_CACHE_PRICE_FIELDS)
        if name in raw
    }
    if _BATCH_FIELD in raw:
        amounts[_BATCH_FIELD] = _amount(key, _BATCH_FIELD, raw[_BATCH_FIELD])
        if amounts[_BATCH_FIELD] > 1:
            raise CatalogError(f"{key}: {_BATCH_FIELD} is a share of the price, from 0 to 1")
    if _CACHE_MINIMUM_FIELD in raw:
        minimum = _positive_int(key, _CACHE_MINIMUM_FIELD, raw[_CACHE_MINIMUM_FIELD])
        amounts[_CACHE_MINIMUM_FIELD] = minimum
    price = Price(**amounts) if given else None
    limits = {name: _positive_int(key, name, raw[name]) for name in _LIMIT_FIELDS if name in raw}
    return ModelEntry(price, RateLimit(**limits))


def _amount(key: str, name: str, value: Any) -> Decimal:
    try:
        # str() first so that 0.15 becomes Decimal("0.15"), not its binary approximation.
        amount = Decimal(str(value)) if not isinstance(value, bool) else None
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        raise CatalogError(f"{key}: {name} must be a number >= 0, got {value!r}")
    return amount


def _positive_int(key: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CatalogError(f"{key}: {name} must be a whole number > 0, got {value!r}")
    return value
