"""Temperature and top_p travel through both SDK adapters to the wire (where the SDK can send
them), and into the response-cache key."""

import hashlib
from dataclasses import asdict, replace

import pytest

from llm.engine.providers import anthropic_chat
from llm.engine.providers.cache import cache_key, canonical_json
from llm.engine.providers.client import sends_sampling
from tests.fakes.llm_server import answer

OPENAI_STYLE = ["openai/gpt-4.1", "openai-compatible/llama-3"]
ANTHROPIC = "anthropic/claude-opus-4-8"


@pytest.mark.parametrize("model", OPENAI_STYLE)
def test_top_p_and_temperature_reach_openai_style_servers(
    model, make_client, llm_server, user_request
):
    make_client(model).chat(user_request(model, temperature=0.7, top_p=0.9))

    body = llm_server.requests[0].body
    assert (body["temperature"], body["top_p"]) == (0.7, 0.9)
    assert sends_sampling(model)


@pytest.mark.parametrize("model", [*OPENAI_STYLE, ANTHROPIC])
def test_a_request_without_top_p_leaves_it_to_the_provider(
    model, make_client, llm_server, user_request
):
    make_client(model).chat(user_request(model))

    assert "top_p" not in llm_server.requests[0].body


def test_an_anthropic_sdk_with_sampling_arguments_sends_them(
    monkeypatch, make_client, llm_server, user_request
):
    monkeypatch.setattr(anthropic_chat, "SENDS_SAMPLING", True)
    provider = anthropic_chat.AnthropicChatProvider(
        model_name="claude-opus-4-8", api_key="k", base_url=llm_server.anthropic_base_url,
        timeout_seconds=5,
    )  # fmt: skip

    arguments = provider.render(user_request(ANTHROPIC, temperature=0.7, top_p=0.9))

    assert (arguments["temperature"], arguments["top_p"]) == (0.7, 0.9)


def test_an_anthropic_sdk_without_sampling_arguments_answers_without_them(
    monkeypatch, make_client, llm_server, user_request
):
    # SDK 2.x has no temperature argument and its API version refuses one: the call must not
    # break on it (it raised TypeError inside the SDK and was retried as a malformed reply).
    monkeypatch.setattr(anthropic_chat, "SENDS_SAMPLING", False)

    response = make_client(ANTHROPIC, max_retries=0).chat(
        user_request(ANTHROPIC, temperature=0.0, top_p=0.9)
    )

    body = llm_server.requests[0].body
    assert response.text == "Okay." and "temperature" not in body and "top_p" not in body
    assert not sends_sampling(ANTHROPIC)


def test_the_offline_scripts_take_no_sampling_settings():
    assert not sends_sampling("offline/standard")


def test_top_p_changes_the_cache_key_and_an_unset_one_keeps_the_old_key(user_request):
    base = user_request("openai/gpt-5.5")

    def key(request):
        return cache_key(request, provider="openai", base_url="https://a/v1")

    assert key(replace(base, top_p=0.9)) != key(base)
    assert key(replace(base, top_p=0.9)) != key(replace(base, top_p=0.5))
    # A call that never set top_p keeps the key it had before top_p existed, so cached
    # answers stay valid.
    assert key(base).endswith(":" + _key_before_top_p(base))


def _message_before_reasoning(message) -> dict:
    """A message as the key recipe read it before reasoning blocks were kept."""
    fields = ("role", "content", "tool_calls", "tool_call_id", "tool_name")
    return {name: value for name, value in asdict(message).items() if name in fields}


def _key_before_top_p(request) -> str:
    parts = {
        "provider": "openai", "model": request.model, "base_url": "https://a/v1",
        "system": request.system,
        "messages": [_message_before_reasoning(m) for m in request.messages],
        "tools": [asdict(t) for t in request.tools],
        "sampling": {"temperature": request.temperature, "max_tokens": request.max_tokens},
        "sample": request.sample,
    }  # fmt: skip
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-5.5",
        "openai-compatible/llama-3@thinking=off",
        "openai-compatible/x@temperature=9",
    ],
)
def test_the_pages_never_claim_sampling_reached_a_model_whose_settings_drop_or_refuse_it(model):
    # A reasoning model drops a role's temperature (generation.apply); settings a model refuses
    # never reach it at all.
    assert not sends_sampling(model)


def test_sends_sampling_agrees_with_what_is_sent(make_client, llm_server, user_request):
    model = "openai/gpt-5.5"
    llm_server.script(answer("ok"))
    make_client(model).chat(user_request(model, temperature=0.7, top_p=0.9))
    body = llm_server.requests[0].body
    assert "temperature" not in body and "top_p" not in body and not sends_sampling(model)
