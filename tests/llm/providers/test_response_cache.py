import logging
from dataclasses import replace
from decimal import Decimal

import pytest

from llm.clients import DjangoCacheStore
from llm.engine.chat import Message, ToolCall, ToolSpec
from llm.engine.providers import InMemoryStore
from llm.engine.providers.cache import cache_key, key_parts
from llm.engine.structured import InvalidOutput, StructuredFailure, request_json
from tests.fakes.llm_server import FakeToolCall, answer

MODEL = "openai/gpt-5.5"


def test_a_repeated_call_is_answered_from_the_cache_for_free(make_client, llm_server, user_request):
    llm_server.script(answer("See you Tuesday.", tool_calls=(FakeToolCall("c1", "f", "{}"),)))
    client = make_client(MODEL, cache_store=InMemoryStore(), use_cache=True)

    first = client.chat(user_request(MODEL))
    second = client.chat(user_request(MODEL))

    assert len(llm_server.requests) == 1
    assert (first.cached, second.cached) == (False, True)
    assert first.cost_usd > 0
    assert second.cost_usd == Decimal(0)
    assert second.usage == first.usage
    assert (second.text, second.tool_calls) == (first.text, first.tool_calls)


def test_a_client_with_the_cache_switched_off_calls_the_model_every_time(
    make_client, llm_server, user_request
):
    store = InMemoryStore()
    make_client(MODEL, cache_store=store, use_cache=True).chat(user_request(MODEL))

    response = make_client(MODEL, cache_store=store, use_cache=False).chat(user_request(MODEL))

    assert not response.cached
    assert len(llm_server.requests) == 2


def test_the_key_changes_with_anything_that_changes_the_answer(user_request):
    base = user_request(MODEL)
    tool = ToolSpec("get_profile", "Read the profile.", {"type": "object"})
    variants = [
        replace(base, system="Be brief."),
        replace(base, temperature=0.7),
        replace(base, max_tokens=10),
        replace(base, tools=(tool,)),
        replace(base, messages=user_request(MODEL, "Hi").messages),
    ]
    base_key = cache_key(base, provider="openai", base_url="https://a/v1")

    keys = {cache_key(variant, provider="openai", base_url="https://a/v1") for variant in variants}

    assert base_key not in keys and len(keys) == len(variants)
    assert cache_key(base, provider="openai", base_url="https://b/v1") != base_key


def test_hints_change_the_key_only_for_the_offline_provider(user_request):
    plain = user_request("offline/careful")
    hinted = replace(plain, hints={"patient_name": "Maria"})

    def key(request, provider):
        return cache_key(request, provider=provider, base_url="")

    assert key(plain, "openai") == key(hinted, "openai")
    assert key(plain, "offline") != key(hinted, "offline")


def test_explain_key_shows_which_part_differs(make_client, user_request):
    client = make_client(MODEL)

    cold = client.explain_key(user_request(MODEL))
    warm = client.explain_key(user_request(MODEL, temperature=1.0))

    differing = [
        name
        for name in cold["part_hashes"]
        if cold["part_hashes"][name] != warm["part_hashes"][name]
    ]
    assert differing == ["sampling"]
    assert cold["provider"] == "openai" and cold["model"] == MODEL
    assert cold["base_url"].startswith("http://127.0.0.1")


def test_a_miss_is_logged_with_the_key_parts_but_no_secrets(make_client, user_request, caplog):
    client = make_client(MODEL, cache_store=InMemoryStore(), use_cache=True)

    with caplog.at_level(logging.DEBUG, logger="llm.cache"):
        client.chat(user_request(MODEL))

    assert "cache miss" in caplog.text and "part_hashes" in caplog.text
    assert "test-openai-key" not in caplog.text


def test_the_django_store_round_trips_through_the_llm_cache(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "llm": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "llm"},
    }
    store = DjangoCacheStore()

    store.set("llm:v1:abc", '{"text": "hi"}')

    assert store.get("llm:v1:abc") == '{"text": "hi"}'
    assert store.get("llm:v1:missing") is None


def test_calls_of_different_samples_never_share_an_entry(make_client, llm_server, user_request):
    client = make_client(MODEL, cache_store=InMemoryStore(), use_cache=True)

    first = client.chat(user_request(MODEL, sample="conversation-seed:1"))
    other = client.chat(user_request(MODEL, sample="conversation-seed:2"))
    replay = client.chat(user_request(MODEL, sample="conversation-seed:1"))

    assert (first.cached, other.cached, replay.cached) == (False, False, True)
    assert len(llm_server.requests) == 2
    assert "sample" not in llm_server.requests[0].body  # never sent to the model


def test_the_sample_is_one_of_the_explained_key_parts(make_client, user_request):
    explained = make_client(MODEL).explain_key(user_request(MODEL, sample="judge:1"))
    assert "sample" in explained["part_hashes"]


def test_forget_drops_the_cached_answer(make_client, llm_server, user_request):
    client = make_client(MODEL, cache_store=InMemoryStore(), use_cache=True)
    client.chat(user_request(MODEL))

    client.forget(user_request(MODEL))
    again = client.chat(user_request(MODEL))

    assert not again.cached
    assert len(llm_server.requests) == 2


def test_an_answer_that_failed_validation_is_never_served_from_the_cache_again(
    make_client, llm_server, user_request
):

    def needs_score(data):
        if "score" not in data:
            raise InvalidOutput("no score")
        return data

    llm_server.script(answer("prose, no JSON"), answer('{"note": "still no score"}'))
    client = make_client(MODEL, cache_store=InMemoryStore(), use_cache=True)
    with pytest.raises(StructuredFailure):
        request_json(client, user_request(MODEL), needs_score, max_repairs=1)
    llm_server.script(answer('{"score": 4}'))

    result = request_json(client, user_request(MODEL), needs_score, max_repairs=1)

    assert result.data == {"score": 4}
    assert [response.cached for response in result.responses] == [False]
    assert len(llm_server.requests) == 3


def test_a_cached_answer_keeps_the_thinking_it_must_send_back(
    make_client, llm_server, user_request
):
    model = "anthropic/claude-opus-4-8"
    call = FakeToolCall("tu_1", "list_appointments", "{}")
    llm_server.script(answer(tool_calls=(call,), reasoning="Look first.", redacted_reasoning="x=="))
    client = make_client(model, cache_store=InMemoryStore(), use_cache=True)

    first = client.chat(user_request(model))
    second = client.chat(user_request(model))

    assert second.cached and second.reasoning_blocks == first.reasoning_blocks
    assert [block["type"] for block in second.reasoning_blocks] == ["thinking", "redacted_thinking"]


def test_thinking_sent_back_joins_the_key_and_leaves_other_keys_as_they_were(user_request):
    base = user_request(MODEL)
    turn = Message(role="assistant", tool_calls=(ToolCall("c1", "f", "{}"),))
    thought = {"type": "thinking", "thinking": "Look first.", "signature": "s1"}
    without = replace(base, messages=(*base.messages, turn))
    with_thought = replace(
        without, messages=(*base.messages, replace(turn, reasoning_blocks=(thought,)))
    )

    key = cache_key(without, provider="anthropic", base_url="")
    assert cache_key(with_thought, provider="anthropic", base_url="") != key
    # The key of a turn without reasoning is the one it had before reasoning was kept.
    parts = key_parts(without, provider="anthropic", base_url="")
    assert "reasoning_blocks" not in parts["messages"][1]


def test_the_key_hashes_the_same_text_as_the_canonical_json_of_its_parts():
    # cache_key writes each message's JSON once and puts it into the parts' text; every key
    # stored before must still be found, so the text must be exactly the parts' JSON.
    from hashlib import sha256

    from llm.engine.chat import ChatRequest
    from llm.engine.providers.cache import KEY_VERSION, canonical_json

    call = ToolCall(id="c1", name="list_appointments", arguments='{"day": "2026-12-01"}')
    messages = (
        Message(role="user", content='Grüße "messages": [] \\ ok'),
        Message(role="assistant", content="", tool_calls=(call,)),
        Message(role="tool", content='{"ok": 1}', tool_call_id="c1", tool_name="list_appointments"),
        Message(role="assistant", content="Done", reasoning_blocks=({"type": "thinking", "x": 1},)),
    )  # fmt: skip
    tool = ToolSpec(name="list_appointments", description="d", parameters={"type": "object"})
    for provider, hints in (("openai", {}), ("offline", {"messages": [], "turn": 2})):
        for cut in range(len(messages) + 1):
            request = ChatRequest(
                model=f"{provider}/m", purpose="agent", system="Be kind.",
                messages=messages[:cut], tools=(tool,), temperature=0.2, hints=hints,
                sample="conversation-seed:3",
            )  # fmt: skip
            parts = key_parts(request, provider=provider, base_url="http://x")
            expected = sha256(canonical_json(parts).encode("utf-8")).hexdigest()
            assert cache_key(request, provider=provider, base_url="http://x") == (
                f"llm:{KEY_VERSION}:{expected}"
            )
