from decimal import Decimal

import pytest

from llm.engine.chat import Usage
from llm.engine.providers import CatalogError, load_catalog
from llm.engine.providers.catalog import PRICES_PATH, parse_catalog


def test_the_shipped_prices_file_loads_and_prices_offline_at_zero():
    catalog = load_catalog(PRICES_PATH)

    assert catalog.price_for("offline/careful").cost(Usage(500, 500)) == 0
    assert catalog.limit_for("offline/careful").unlimited
    assert catalog.price_for("openai/gpt-5.5") is not None
    assert catalog.price_for("anthropic/claude-opus-4-8") is not None


def test_cost_is_tokens_times_price_per_million():
    catalog = parse_catalog(
        {"models": {"openai/m": {"input_per_million": 1.25, "output_per_million": 10}}}
    )

    cost = catalog.price_for("openai/m").cost(Usage(input_tokens=1000, output_tokens=500))

    assert cost == Decimal("0.00625")


def test_an_exact_entry_beats_a_pattern_and_the_first_pattern_wins():
    catalog = parse_catalog(
        {
            "models": {
                "openai/*": {"input_per_million": 1, "output_per_million": 1},
                "openai/gpt-*": {"input_per_million": 2, "output_per_million": 2},
                "openai/gpt-5.5": {"input_per_million": 3, "output_per_million": 3},
            }
        }
    )

    assert catalog.price_for("openai/gpt-5.5").input_per_million == 3
    assert catalog.price_for("openai/gpt-4.1").input_per_million == 1


def test_a_model_without_an_entry_has_an_unknown_price_and_no_limit():
    catalog = parse_catalog({"models": {}})

    assert catalog.price_for("anthropic/new-model") is None
    assert catalog.limit_for("anthropic/new-model").unlimited


def test_the_client_reports_an_unknown_cost_as_none_not_zero(make_client, user_request):
    response = make_client("openai/unlisted-model").chat(user_request("openai/unlisted-model"))

    assert response.cost_usd is None


def test_the_client_prices_a_known_model(make_client, user_request):
    response = make_client("anthropic/claude-opus-4-8").chat(
        user_request("anthropic/claude-opus-4-8")
    )

    assert response.cost_usd == (11 * Decimal("5.00") + 7 * Decimal("25.00")) / 1_000_000


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ({"input_per_million": 1}, "give both"),
        ({"input_per_million": -1, "output_per_million": 1}, "must be a number >= 0"),
        ({"input_per_million": "cheap", "output_per_million": 1}, "must be a number >= 0"),
        ({"input_per_million": True, "output_per_million": 1}, "must be a number >= 0"),
        ({"requests_per_minute": 0}, "whole number > 0"),
        ({"tokens_per_minute": 1.5}, "whole number > 0"),
        ({"input_per_milion": 1}, "unknown fields"),
    ],
)
def test_it_rejects_a_malformed_entry_naming_the_model(entry, complaint):
    with pytest.raises(CatalogError, match=complaint) as raised:
        parse_catalog({"models": {"openai/x": entry}})

    assert "openai/x" in str(raised.value)
