"""Generation settings reach each provider in its own words, through the real SDKs, and the fake
server checks each body against the SDK's request types (so a field a provider does not take
fails here as it would there)."""

import pytest

from llm.engine.chat import ProviderError
from llm.engine.providers import InMemoryStore
from tests.fakes.llm_server import answer


def sent(llm_server):
    (recorded,) = llm_server.requests
    return recorded.body


def test_openai_gets_the_reasoning_effort_and_never_a_roles_temperature(
    make_client, llm_server, user_request
):
    model = "openai/gpt-5.5@effort=high"
    llm_server.script(answer('{"score": 4}'))
    make_client(model).chat(user_request(model, temperature=0.0, max_tokens=800))

    body = sent(llm_server)
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 800
    assert "temperature" not in body and body["model"] == "gpt-5.5"


def test_claude_gets_its_thinking_budget_within_the_output_limit(
    make_client, llm_server, user_request
):
    model = "anthropic/claude-opus-4-8@thinking=2048"
    llm_server.script(answer("Fine."))
    make_client(model).chat(user_request(model, max_tokens=1000))

    body = sent(llm_server)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048 and body["model"] == "claude-opus-4-8"


def test_qwen3_on_vllm_gets_its_thinking_switch_through_the_chat_template(
    make_client, llm_server, user_request
):
    model = "openai-compatible/Qwen/Qwen3-32B@thinking=off"
    llm_server.script(answer("Fine."))
    make_client(model).chat(user_request(model))

    body = sent(llm_server)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["model"] == "Qwen/Qwen3-32B"


def test_two_settings_of_one_model_never_share_a_cached_answer(
    make_client, llm_server, user_request
):
    store = InMemoryStore()
    for effort in ("low", "high", "low"):
        model = f"openai/gpt-5.5@effort={effort}"
        make_client(model, cache_store=store, use_cache=True).chat(user_request(model))
    assert [r.body["reasoning_effort"] for r in llm_server.requests] == ["low", "high"]


def test_a_client_is_never_built_for_settings_its_model_refuses(make_client):
    with pytest.raises(ProviderError) as refused:
        make_client("openai/gpt-5.5@temperature=0.2")
    assert refused.value.kind == "config"
    assert "refuses a custom temperature" in str(refused.value)


def test_settings_do_not_change_the_price(make_client):
    plain, high = make_client("openai/gpt-5.5"), make_client("openai/gpt-5.5@effort=high")
    assert plain.price is not None and high.price == plain.price


def test_claudes_effort_goes_in_its_output_config(make_client, llm_server, user_request):
    model = "anthropic/claude-opus-4-8@effort=xhigh"
    llm_server.script(answer("Fine."))
    make_client(model).chat(user_request(model))

    assert sent(llm_server)["output_config"] == {"effort": "xhigh"}


def test_a_price_set_for_a_model_with_its_settings_is_the_one_used():
    from decimal import Decimal

    from llm.engine.providers.catalog import Price, default_catalog

    own = Price(Decimal("1"), Decimal("2"))
    catalog = default_catalog().with_prices({"openai/gpt-5.5@effort=high": own})
    used = catalog.price_for("openai/gpt-5.5@effort=high")
    # Staff's rates, the price file's batch discount (a price set keeps the provider's batch).
    assert (used.input_per_million, used.output_per_million) == (Decimal("1"), Decimal("2"))
    assert used.batch_discount == catalog.price_for("openai/gpt-5.5").batch_discount
    assert catalog.price_for("openai/gpt-5.5@effort=low") == catalog.price_for("openai/gpt-5.5")
