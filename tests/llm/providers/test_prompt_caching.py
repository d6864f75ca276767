"""Prompt caching through the real SDKs against the local fake: cached tokens are read from
each provider's usage, billed at their own prices, and Anthropic's stable prefix is marked."""

from dataclasses import replace
from decimal import Decimal

import httpx
import pytest

from llm.engine.chat import ChatRequest, Message, ToolSpec, Usage
from llm.engine.providers import CatalogError, ModelClient, ProviderSettings
from llm.engine.providers.catalog import parse_catalog
from tests.fakes.llm_server import FakeReply, running_fake_llm_server
from tests.fakes.request_types import request_problems

MILLION = Decimal(1_000_000)
EPHEMERAL = {"cache_control": {"type": "ephemeral"}}


def test_openai_cached_prompt_tokens_are_billed_at_the_cached_price(make_client, llm_server):
    # The example: 8 calls of 1,000 input tokens, 800 of them read from the cache.
    llm_server.script(*[FakeReply(text="ok", input_tokens=1000, cached_tokens=800)] * 8)
    client = make_client("openai/gpt-4.1")  # $2.00 input, $0.50 cached, $8.00 output

    responses = [client.chat(_request("openai/gpt-4.1", f"call {n}")) for n in range(8)]

    assert {r.usage for r in responses} == {Usage(1000, 7, cached_input_tokens=800)}
    billed = sum(r.cost_usd for r in responses)
    listed = sum(r.list_cost_usd for r in responses)
    assert billed == 8 * (200 * Decimal("2.00") + 800 * Decimal("0.50") + 7 * 8) / MILLION
    assert listed == 8 * (1000 * Decimal("2.00") + 7 * 8) / MILLION
    assert billed == Decimal("0.006848") and listed == Decimal("0.016448")


def test_the_responses_api_reports_cached_input_tokens(make_client, llm_server):
    model = "openai/gpt-5.5@api=responses"
    llm_server.script(FakeReply(text="ok", input_tokens=2000, cached_tokens=1536))

    response = make_client(model).chat(_request(model))

    assert llm_server.requests[0].path == "/v1/responses"
    assert response.usage == Usage(2000, 7, cached_input_tokens=1536)
    # The GPT-5 family reads its cache at a tenth of the input price.
    assert response.cost_usd == (464 * Decimal("1.25") + 1536 * Decimal("0.125") + 70) / MILLION


def test_anthropic_reads_at_a_tenth_and_writes_at_a_quarter_more(make_client, llm_server):
    # 2,000 prompt tokens: 1,500 read from the cache, 400 written to it, 100 neither.
    llm_server.script(
        FakeReply(text="ok", input_tokens=2000, cached_tokens=1500, cache_write_tokens=400)
    )

    response = make_client("anthropic/claude-sonnet-4-5").chat(
        _request("anthropic/claude-sonnet-4-5")
    )

    assert response.usage == Usage(2000, 7, cached_input_tokens=1500, cache_write_tokens=400)
    input_price = Decimal("3.00")
    expected = (
        100 * input_price + 1500 * input_price / 10 + 400 * input_price * Decimal("1.25") + 7 * 15
    ) / MILLION
    assert response.cost_usd == expected
    assert response.list_cost_usd == (2000 * input_price + 7 * 15) / MILLION


def test_a_compatible_server_without_cache_details_costs_what_it_did(make_client, llm_server):
    model = "openai-compatible/local-llama"
    catalog = parse_catalog({"models": {model: {"input_per_million": 1, "output_per_million": 2}}})
    llm_server.script(FakeReply(text="ok", input_tokens=1000, output_tokens=10))

    response = make_client(model, catalog=catalog).chat(_request(model))

    assert "prompt_tokens_details" not in _raw_usage(llm_server, model)
    assert response.usage == Usage(1000, 10)
    assert response.cost_usd == response.list_cost_usd == Decimal(1020) / MILLION


def test_a_price_without_cache_prices_bills_cached_tokens_as_plain_input():
    price = parse_catalog({"models": {"m/x": {"input_per_million": 2, "output_per_million": 4}}})
    usage = Usage(1000, 10, cached_input_tokens=600, cache_write_tokens=300)

    cost = price.price_for("m/x").cost(usage)

    assert cost == price.price_for("m/x").list_cost(usage) == Decimal(2040) / MILLION


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cached_input_per_million": -0.1}, "cached_input_per_million must be a number >= 0"),
        ({"cache_write_per_million": "lots"}, "cache_write_per_million must be a number >= 0"),
    ],
)
def test_a_malformed_cache_price_is_refused_naming_it(fields, message):
    entry = {"input_per_million": 1, "output_per_million": 2, **fields}
    with pytest.raises(CatalogError, match=f"m/x: {message}"):
        parse_catalog({"models": {"m/x": entry}})


def test_a_cache_price_needs_the_plain_prices():
    with pytest.raises(CatalogError, match="needs input_per_million and output_per_million"):
        parse_catalog({"models": {"m/x": {"cached_input_per_million": 0.1}}})


def test_anthropic_marks_tools_system_and_the_stable_part_of_the_first_message(
    make_client, llm_server
):
    request = _request(
        "anthropic/claude-haiku-4-5",
        "RUBRIC: be kind.\nCONVERSATION: hello",
        tools=(ToolSpec("get_profile", "Reads the profile.", {"type": "object"}),),
        cache_prefix_chars=len("RUBRIC: be kind.\n"),
    )

    make_client("anthropic/claude-haiku-4-5").chat(request)

    body = llm_server.requests[0].body
    assert request_problems(body, "anthropic") == []  # the SDK's own types take the marks
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You help patients.", **EPHEMERAL}]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "RUBRIC: be kind.\n", **EPHEMERAL},
        {"type": "text", "text": "CONVERSATION: hello"},
    ]


def test_a_prefix_as_long_as_the_message_marks_it_whole(make_client, llm_server):
    request = _request("anthropic/claude-haiku-4-5", "all stable", cache_prefix_chars=500)

    make_client("anthropic/claude-haiku-4-5").chat(request)

    content = llm_server.requests[0].body["messages"][0]["content"]
    assert content == [{"type": "text", "text": "all stable", **EPHEMERAL}]


def test_the_simulated_anthropic_cache_writes_first_and_reads_after():
    long_system = "Follow the clinic's rules. " * 400  # about 2,700 tokens at 4 characters
    with running_fake_llm_server(prompt_cache=True) as server:
        client = _client(server, "anthropic/claude-haiku-4-5")
        first = client.chat(_request("anthropic/claude-haiku-4-5", "one", system=long_system))
        second = client.chat(_request("anthropic/claude-haiku-4-5", "two", system=long_system))

    assert first.usage.cache_write_tokens > 2500 and first.usage.cached_input_tokens == 0
    assert second.usage.cached_input_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert first.cost_usd > first.list_cost_usd > second.list_cost_usd / 2 > second.cost_usd


def test_the_simulated_openai_cache_reads_the_repeated_prefix_in_steps():
    long_system = "Follow the clinic's rules. " * 400
    with running_fake_llm_server(prompt_cache=True) as server:
        client = _client(server, "openai/gpt-5-mini")
        first = client.chat(_request("openai/gpt-5-mini", "one", system=long_system))
        second = client.chat(_request("openai/gpt-5-mini", "two", system=long_system))
        short = client.chat(_request("openai/gpt-5-mini", "short"))

    assert first.usage.cached_input_tokens == 0
    assert second.usage.cached_input_tokens >= 1024
    assert (second.usage.cached_input_tokens - 1024) % 128 == 0
    assert second.usage.input_tokens - second.usage.cached_input_tokens < 128 + 10
    assert short.usage.cached_input_tokens == 0  # under the 1,024-token minimum
    assert second.cost_usd < first.cost_usd


def _request(model, text="Hello", **fields):
    fields.setdefault("system", "You help patients.")
    return ChatRequest(
        model=model, purpose="assistant", messages=(Message(role="user", content=text),), **fields
    )


def _client(server, model):
    settings = ProviderSettings(
        openai_api_key="test-openai-key",
        openai_base_url=server.openai_base_url,
        anthropic_api_key="test-anthropic-key",
        anthropic_base_url=server.anthropic_base_url,
        max_retries=0,
    )
    return ModelClient(model, settings=settings, use_cache=False)


def _raw_usage(llm_server, model):
    reply = httpx.post(
        f"{llm_server.compatible_base_url}/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
    )
    return reply.json()["usage"]


def test_a_conversation_turn_marks_its_latest_message_and_the_next_turn_reads_it():
    model = "anthropic/claude-haiku-4-5"
    tools = (ToolSpec("lookup", "Looks a record up.", {"type": "object"}),)
    first_turn = (Message(role="user", content="I need an appointment. " * 10),)
    second_turn = (
        *first_turn,
        Message(role="assistant", content="For when?"),
        Message(role="user", content="Tomorrow morning."),
    )
    long_system = "Follow the clinic's rules. " * 400
    with running_fake_llm_server(prompt_cache=True) as server:
        client = _client(server, model)
        first, second = (
            client.chat(
                ChatRequest(model=model, purpose="assistant", system=long_system,
                            messages=messages, tools=tools, cache_latest=True)
            )
            for messages in (first_turn, second_turn)
        )  # fmt: skip
        bodies = [request.body for request in server.requests]

    for body in bodies:
        assert request_problems(body, "anthropic") == []
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        marks = [body["tools"][-1], *body["system"], *body["messages"][-1]["content"]]
        assert sum("cache_control" in block for block in marks) == 3
    # The first turn's mark moved on: only the newest message carries one.
    assert "cache_control" not in bodies[1]["messages"][0]["content"][-1]
    # The second turn reads everything the first one wrote, and writes only what is new.
    assert second.usage.cached_input_tokens == first.usage.cache_write_tokens
    assert 0 < second.usage.cache_write_tokens < 30


def test_a_one_off_call_leaves_its_latest_message_unmarked(make_client, llm_server):
    make_client("anthropic/claude-haiku-4-5").chat(_request("anthropic/claude-haiku-4-5"))

    content = llm_server.requests[0].body["messages"][-1]["content"]
    assert all("cache_control" not in block for block in content)


def test_a_judge_call_marks_the_rubric_and_the_case_before_the_trace(make_client, llm_server):
    rubric, case = "RUBRIC: be kind.\n", "PROFILE: Ana, 54.\n"
    request = replace(
        _request("anthropic/claude-opus-4-8", rubric + case + "TRACE: hello"),
        cache_prefix_chars=len(rubric),
        cache_case_chars=len(rubric + case),
    )

    make_client("anthropic/claude-opus-4-8").chat(request)

    body = llm_server.requests[0].body
    assert request_problems(body, "anthropic") == []
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": rubric, **EPHEMERAL},
        {"type": "text", "text": case, **EPHEMERAL},
        {"type": "text", "text": "TRACE: hello"},
    ]


def test_the_case_prefix_gives_way_when_four_breakpoints_are_taken(make_client, llm_server):
    # Tools, system prompt and the latest message take three: only the rubric's is left.
    request = _request(
        "anthropic/claude-opus-4-8",
        "RUBRIC.CASE.TRACE",
        tools=(ToolSpec("get_profile", "Reads the profile.", {"type": "object"}),),
        cache_prefix_chars=len("RUBRIC."),
        cache_case_chars=len("RUBRIC.CASE."),
        cache_latest=True,
    )

    make_client("anthropic/claude-opus-4-8").chat(request)

    body = llm_server.requests[0].body
    marks = str(body).count("cache_control")
    assert marks == 4 and request_problems(body, "anthropic") == []
    assert [block["text"] for block in body["messages"][0]["content"]] == ["RUBRIC.", "CASE.TRACE"]


def test_a_case_played_by_another_agent_reads_the_case_prefix_from_the_simulated_cache():
    rubric, case = "Score it kindly. " * 200, "The patient's record. " * 200  # ~850 and ~1,100
    with running_fake_llm_server(prompt_cache=True) as server:
        client = _client(server, "anthropic/claude-opus-4-8")
        usages = [
            client.chat(
                replace(
                    _request("anthropic/claude-opus-4-8", rubric + case + trace),
                    cache_prefix_chars=len(rubric),
                    cache_case_chars=len(rubric + case),
                )
            ).usage
            for trace in ("first agent's trace", "second agent's trace")
        ]

    written, read = usages
    assert written.cached_input_tokens == 0 and written.cache_write_tokens > 0
    # The second agent's call reads the system prompt, the rubric and the case.
    assert read.cached_input_tokens >= len(rubric + case) // 4
