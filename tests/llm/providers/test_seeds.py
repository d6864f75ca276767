"""Each call's seed goes to OpenAI's chat completions and OpenAI-compatible servers, never to
the Responses API, Anthropic or the offline scripts; the backend's fingerprint comes back on
the response, and the cache keeps both."""

import hashlib
from dataclasses import replace

import pytest

from llm.engine import generation
from llm.engine.chat import ChatRequest
from llm.engine.providers import cache
from llm.engine.providers.cache import InMemoryStore
from llm.engine.seeds import SEED_BITS, provider_seed
from tests.fakes.llm_server import answer

SAMPLE = "conversation-seed:12345"
SEEDED = ["openai/gpt-4.1", "openai/gpt-5.5", "openai-compatible/Qwen/Qwen3-8B"]
UNSEEDED = ["openai/gpt-5.5@api=responses", "anthropic/claude-opus-4-8"]


@pytest.mark.parametrize("model", SEEDED)
def test_chat_completions_get_the_seed_of_the_draw(make_client, llm_server, user_request, model):
    llm_server.script(answer("Hi.", fingerprint="fp_a1"))

    response = make_client(model).chat(user_request(model, sample=SAMPLE))

    assert llm_server.requests[0].body["seed"] == provider_seed(SAMPLE, "assistant")
    assert response.seed == provider_seed(SAMPLE, "assistant")
    assert response.fingerprint == "fp_a1"


@pytest.mark.parametrize("model", UNSEEDED)
def test_the_responses_api_and_claude_get_no_seed(make_client, llm_server, user_request, model):
    llm_server.script(answer("Hi."))

    response = make_client(model).chat(user_request(model, sample=SAMPLE))

    assert "seed" not in llm_server.requests[0].body
    assert response.seed is None and response.fingerprint == ""


def test_a_call_with_no_sample_carries_no_seed(make_client, llm_server, user_request):
    llm_server.script(answer("Hi."))

    response = make_client("openai/gpt-4.1").chat(user_request("openai/gpt-4.1"))

    assert "seed" not in llm_server.requests[0].body
    assert response.seed is None


def test_the_offline_scripts_get_no_seed():
    request = ChatRequest("offline/careful", "assistant", "", (), sample=SAMPLE)
    effective = generation.apply(
        request, generation.settings_of("offline/careful"), generation.family_of("offline/careful")
    )

    assert effective.seed is None


def test_the_seed_depends_on_the_draw_and_the_role_only():
    patient, assistant = provider_seed(SAMPLE, "patient"), provider_seed(SAMPLE, "assistant")

    assert patient != assistant
    assert provider_seed(SAMPLE, "patient") == patient
    assert provider_seed("conversation-seed:12346", "patient") != patient
    assert 0 <= patient < 2**SEED_BITS
    # Pinned to its recipe: a change changes every seed sent, so replays no longer draw alike.
    digest = hashlib.sha256(b"conversation-seed:1\x1fassistant").digest()
    assert provider_seed("conversation-seed:1", "assistant") == int(digest[:4].hex(), 16) // 2
    assert provider_seed("", "assistant") is None


def test_a_cached_answer_keeps_its_seed_and_fingerprint(make_client, llm_server, user_request):
    llm_server.script(answer("Hi.", fingerprint="fp_b2"))
    client = make_client("openai/gpt-4.1", use_cache=True, cache_store=InMemoryStore())
    request = user_request("openai/gpt-4.1", sample=SAMPLE)

    client.chat(request)
    again = client.chat(request)

    assert again.cached and len(llm_server.requests) == 1
    assert again.seed == provider_seed(SAMPLE, "assistant") and again.fingerprint == "fp_b2"


def test_only_a_seed_set_apart_from_the_sample_changes_the_cache_key(user_request):
    request = user_request("openai/gpt-4.1", sample=SAMPLE)
    derived = replace(request, seed=provider_seed(SAMPLE, "assistant"))
    chosen = replace(request, seed=99)

    def key(r):
        return cache.cache_key(r, provider="openai", base_url="")

    assert key(derived) == key(request)
    assert key(chosen) != key(request)
