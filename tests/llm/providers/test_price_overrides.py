"""Prices laid over the data file (staff prices): the exact model wins, its rate limit stays."""

from decimal import Decimal

import pytest

from llm.engine.chat import Usage
from llm.engine.providers.catalog import CatalogError, Price, parse_catalog

FILE = {
    "models": {
        "openai/gpt-5.5": {"input_per_million": 1.25, "output_per_million": 10},
        "offline/*": {"input_per_million": 0, "output_per_million": 0},
        "openai-compatible/*": {"requests_per_minute": 60},
    }
}


def test_a_price_laid_over_the_file_wins_for_that_exact_model_only():
    catalog = parse_catalog(FILE).with_prices({"offline/careful": Price(Decimal(2), Decimal(4))})

    assert catalog.price_for("offline/careful").cost(Usage(1_000_000, 500_000)) == 4
    assert catalog.price_for("offline/careless").cost(Usage(1_000_000, 0)) == 0
    assert catalog.price_for("openai/gpt-5.5").input_per_million == Decimal("1.25")


def test_a_model_priced_over_a_pattern_keeps_the_patterns_rate_limit():
    catalog = parse_catalog(FILE).with_prices(
        {"openai-compatible/llama": Price(Decimal("0.2"), Decimal("0.6"))}
    )

    assert catalog.limit_for("openai-compatible/llama").requests_per_minute == 60
    assert catalog.price_for("openai-compatible/llama").output_per_million == Decimal("0.6")


def test_the_catalog_names_each_unpriced_model_once_in_the_order_given():
    catalog = parse_catalog(FILE)

    unpriced = catalog.unpriced(
        ["openai-compatible/b", "offline/careful", "openai-compatible/a", "openai-compatible/b"]
    )

    assert unpriced == ["openai-compatible/b", "openai-compatible/a"]


def test_the_cache_minimum_is_read_checked_and_kept_under_a_staff_price_and_in_batches():
    entry = {"input_per_million": 1, "output_per_million": 5, "cache_min_tokens": 4096}
    catalog = parse_catalog({"models": {"anthropic/small": entry}})
    assert catalog.price_for("anthropic/small").cache_min_tokens == 4096
    assert catalog.price_for("anthropic/small").batched().cache_min_tokens == 4096
    staff = catalog.with_prices({"anthropic/small": Price(Decimal(2), Decimal(6))})
    assert staff.price_for("anthropic/small").cache_min_tokens == 4096
    for wrong in (0, 1.5, "many"):
        with pytest.raises(CatalogError, match="cache_min_tokens"):
            parse_catalog({"models": {"anthropic/small": {**entry, "cache_min_tokens": wrong}}})
