from concurrent.futures import ThreadPoolExecutor

import pytest

from llm.clients import ModelRouter
from llm.engine.chat import ProviderError
from llm.engine.providers import InMemoryStore, ProviderSettings
from tests.fakes.llm_server import running_fake_llm_server


def test_many_threads_can_share_one_client(make_client, llm_server, user_request):
    client = make_client("openai/gpt-5.5", cache_store=InMemoryStore(), use_cache=True)
    questions = [f"Question {number}" for number in range(16)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(
            pool.map(lambda q: client.chat(user_request("openai/gpt-5.5", q)), questions)
        )

    assert all(response.text == "Okay." for response in responses)
    asked = sorted(request.body["messages"][1]["content"] for request in llm_server.requests)
    assert asked == sorted(questions)


def test_a_client_refuses_a_request_for_another_model(make_client, user_request):
    with pytest.raises(ProviderError) as raised:
        make_client("openai/gpt-5.5").chat(user_request("anthropic/claude-opus-4-8"))

    assert raised.value.kind == "config"


def test_the_router_sends_each_request_to_its_own_model(llm_server, user_request):
    settings = ProviderSettings(
        openai_api_key="k",
        openai_base_url=llm_server.openai_base_url,
        anthropic_api_key="k",
        anthropic_base_url=llm_server.anthropic_base_url,
    )
    router = ModelRouter(settings=settings, use_cache=False)

    router.chat(user_request("openai/gpt-5.5"))
    router.chat(user_request("anthropic/claude-opus-4-8"))

    assert [request.path for request in llm_server.requests] == [
        "/v1/chat/completions",
        "/v1/messages",
    ]
    assert router.client_for("openai/gpt-5.5") is router.client_for("openai/gpt-5.5")


def test_the_fake_server_can_stand_in_for_model_latency(user_request):
    with running_fake_llm_server(delay_seconds=0.2) as server:
        settings = ProviderSettings(openai_api_key="k", openai_base_url=server.openai_base_url)
        router = ModelRouter(settings=settings, use_cache=False)

        response = router.chat(user_request("openai/gpt-5.5"))

    assert response.latency_ms >= 200


def test_offline_answers_take_the_configured_latency():
    from llm.engine.chat import ChatRequest, Message

    request = ChatRequest(
        model="offline/standard",
        purpose="judge",
        system="Score the conversation.",
        messages=(Message(role="user", content="Conversation"),),
        hints={"rubric": "no_such_rubric"},  # the scripted judge's neutral answer
    )
    slow = ModelRouter(settings=ProviderSettings(offline_latency_seconds=0.3), use_cache=False)
    fast = ModelRouter(settings=ProviderSettings(), use_cache=False)

    slow_answer = slow.chat(request)
    fast_answer = fast.chat(request)

    assert slow_answer.latency_ms >= 300
    assert fast_answer.latency_ms < 300
    assert slow_answer.text == fast_answer.text
