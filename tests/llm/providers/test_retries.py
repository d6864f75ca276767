import random
import socket

import pytest

from llm.engine.chat import ProviderError
from llm.engine.providers import InMemoryStore, ModelClient, ProviderSettings
from llm.engine.providers.errors import parse_retry_after
from llm.engine.providers.retry import RetryPolicy
from tests.fakes.llm_server import (
    answer,
    bad_request,
    context_overflow,
    malformed,
    rate_limited,
    server_error,
)

BOTH_PROVIDERS = pytest.mark.parametrize(
    "model", ["openai/gpt-5.5", "anthropic/claude-opus-4-8", "openai-compatible/llama"]
)


@BOTH_PROVIDERS
def test_it_waits_as_long_as_retry_after_asks_then_retries(
    model, make_client, llm_server, sleeps, user_request
):
    llm_server.script(rate_limited(retry_after="2"), answer("Booked."))

    response = make_client(model).chat(user_request(model))

    assert response.text == "Booked."
    assert sleeps == [2.0]
    assert len(llm_server.requests) == 2


def test_it_prefers_retry_after_ms(make_client, llm_server, sleeps, user_request):
    llm_server.script(rate_limited(retry_after="2", retry_after_ms="250"), answer("Done."))

    make_client("openai/gpt-5.5").chat(user_request("openai/gpt-5.5"))

    assert sleeps == [0.25]


def test_it_reads_retry_after_as_an_http_date():
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
    headers = {"retry-after": "Tue, 14 Nov 2023 22:13:25 GMT"}

    assert parse_retry_after(headers, now=lambda: now) == 5.0


def test_it_ignores_an_unreadable_retry_after():
    assert parse_retry_after({"retry-after": "soon"}) is None


@BOTH_PROVIDERS
def test_it_retries_a_server_error_then_succeeds(
    model, make_client, llm_server, sleeps, user_request
):
    llm_server.script(server_error(500), server_error(503), answer("All set."))

    response = make_client(model).chat(user_request(model))

    assert response.text == "All set."
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0  # full jitter under 1 s, 2 s


def test_it_gives_up_after_the_last_retry_with_the_last_error(
    make_client, llm_server, sleeps, user_request
):
    llm_server.script(server_error(), server_error(), server_error(502))

    with pytest.raises(ProviderError) as raised:
        make_client("openai/gpt-5.5", max_retries=2).chat(user_request("openai/gpt-5.5"))

    assert (raised.value.kind, raised.value.status) == ("server", 502)
    assert len(llm_server.requests) == 3
    assert len(sleeps) == 2


@BOTH_PROVIDERS
def test_it_does_not_retry_a_bad_request(model, make_client, llm_server, sleeps, user_request):
    llm_server.script(bad_request())

    with pytest.raises(ProviderError) as raised:
        make_client(model).chat(user_request(model))

    assert (raised.value.kind, raised.value.status) == ("bad_request", 400)
    assert len(llm_server.requests) == 1
    assert sleeps == []


@BOTH_PROVIDERS
def test_it_reports_context_overflow_without_retrying(
    model, make_client, llm_server, sleeps, user_request
):
    llm_server.script(context_overflow())

    with pytest.raises(ProviderError) as raised:
        make_client(model).chat(user_request(model))

    assert raised.value.kind == "context_overflow"
    assert len(llm_server.requests) == 1
    assert sleeps == []


def test_it_retries_a_timeout_then_reports_it(make_client, llm_server, sleeps, user_request):
    llm_server.script(answer("late", delay_seconds=2), answer("late", delay_seconds=2))
    client = make_client("openai/gpt-5.5", max_retries=1, timeout_seconds=0.2)

    with pytest.raises(ProviderError) as raised:
        client.chat(user_request("openai/gpt-5.5"))

    assert raised.value.kind == "timeout"
    assert len(llm_server.requests) == 2
    assert len(sleeps) == 1


def test_it_retries_when_the_server_cannot_be_reached(sleeps, user_request):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings = ProviderSettings(
        openai_api_key="test-key",
        openai_base_url=f"http://127.0.0.1:{closed_port}/v1",
        max_retries=2,
        timeout_seconds=2,
    )
    client = ModelClient("openai/gpt-5.5", settings=settings, sleep=sleeps.append)

    with pytest.raises(ProviderError) as raised:
        client.chat(user_request("openai/gpt-5.5"))

    assert raised.value.kind == "connection"
    assert len(sleeps) == 2


def test_it_spreads_backoff_with_full_jitter_up_to_the_cap():
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, rng=random.Random(3))

    delays = [policy.delay(attempt, None) for attempt in range(10) for _ in range(20)]

    assert all(0 <= delay <= 8.0 for delay in delays)
    assert max(delays[:20]) <= 1.0
    assert len(set(delays)) == len(delays)


def test_it_caps_a_very_long_retry_after():
    assert RetryPolicy(max_retry_after=300).delay(0, 86_400) == 300


@BOTH_PROVIDERS
def test_an_answer_carries_the_retries_it_took_by_kind(
    model, make_client, llm_server, sleeps, user_request
):
    llm_server.script(
        rate_limited(retry_after="0"), server_error(503), malformed("{}"), answer("Booked.")
    )

    response = make_client(model, max_retries=5).chat(user_request(model))

    assert response.text == "Booked."
    assert response.retries == {"rate_limit": 1, "server": 1, "malformed": 1}


@BOTH_PROVIDERS
def test_a_timeout_asked_again_is_counted_as_one(model, make_client, llm_server, user_request):
    llm_server.script(answer("Too late.", delay_seconds=3), answer("In time."))

    response = make_client(model, timeout_seconds=0.5).chat(user_request(model))

    assert (response.text, response.retries) == ("In time.", {"timeout": 1})


def test_a_call_that_gives_up_carries_the_retries_it_took(
    make_client, llm_server, sleeps, user_request
):
    llm_server.script(rate_limited(retry_after="0"), server_error(), server_error(502))

    with pytest.raises(ProviderError) as raised:
        make_client("openai/gpt-5.5", max_retries=2).chat(user_request("openai/gpt-5.5"))

    assert raised.value.retries == {"rate_limit": 1, "server": 1}


def test_an_answer_without_faults_or_from_the_cache_made_no_retries(
    make_client, llm_server, sleeps, user_request
):
    client = make_client("openai/gpt-5.5", cache_store=InMemoryStore(), use_cache=True)
    llm_server.script(server_error(500), answer("Fine."))

    first = client.chat(user_request("openai/gpt-5.5"))
    replay = client.chat(user_request("openai/gpt-5.5"))

    assert first.retries == {"server": 1}
    assert replay.cached and replay.retries == {}
