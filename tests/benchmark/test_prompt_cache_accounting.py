"""Prompt caching in a run's accounting: a Claude agent's system prompt and tool list are
written to the provider's cache on its first turn and read from it on the next ones (the fake
simulates the cache), each call's row keeps its cache reads and writes and is billed for them,
and the run page shows the list cost, the cost with caching and their difference."""

from decimal import Decimal

import pytest
from django.urls import reverse

from benchmark.models import ConversationStatus, ModelCall
from jobs.services.accounting import caching_summary
from llm.clients import model_router
from tests.fakes.llm_server import FakeToolCall, answer, running_fake_llm_server
from tests.faults.test_conversation_faults import one_conversation_run

AGENT = "anthropic/claude-haiku-4-5"  # $1.00 input, $0.10 cache reads, $1.25 cache writes
LOOKUP = FakeToolCall(id="call_lookup", name="list_appointments", arguments="{}")


@pytest.fixture
def caching_fake(settings):
    with running_fake_llm_server(default_text="Could you tell me more?", prompt_cache=True) as fake:
        settings.ANTHROPIC_BASE_URL = fake.anthropic_base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
        model_router.cache_clear()
        yield fake
    model_router.cache_clear()


@pytest.mark.django_db(transaction=True)
def test_the_agents_later_turns_read_the_cached_system_prompt_and_tools(
    caching_fake, researcher_client
):
    caching_fake.script(answer(tool_calls=(LOOKUP,)), answer("Nothing is booked; shall I?"))

    conversation = one_conversation_run(agent=AGENT, max_turns=3)

    assert conversation.status == ConversationStatus.FINISHED, conversation.error
    first, second, *_ = conversation.model_calls.filter(purpose="assistant").order_by("pk")
    assert first.cache_write_tokens >= 1024 and first.cached_input_tokens == 0
    # The second turn repeats the marked prefix (tools, then system prompt): read, not written.
    assert second.cached_input_tokens == first.cache_write_tokens
    assert second.input_tokens > first.input_tokens  # the tool call and its result were added
    assert second.cost_usd < second.list_cost_usd / 2
    assert first.cost_usd > first.list_cost_usd  # a cache write costs 1.25x the input price
    _assert_billed_by_the_tokens(first, second)

    summary = caching_summary(ModelCall.objects.filter(run=conversation.run))
    assert summary["saved"] == summary["list_cost"] - summary["cost"] > 0
    page = researcher_client.get(
        reverse("benchmark:run", args=[conversation.run.pk])
    ).content.decode()
    shown = page.split('id="caching-summary"')[1].split("</dl>")[0]
    for label, amount in (
        ("List cost", summary["list_cost"]),
        ("Cost with prompt caching", summary["cost"]),
        ("Saved by caching", summary["saved"]),
    ):
        assert f"{label}</dt><dd>${amount:.4f}" in shown.replace("\n", "")


def _assert_billed_by_the_tokens(*calls):
    for call in calls:
        plain = call.input_tokens - call.cached_input_tokens - call.cache_write_tokens
        billed = (
            plain * Decimal("1.00")
            + call.cached_input_tokens * Decimal("0.10")
            + call.cache_write_tokens * Decimal("1.25")
            + call.output_tokens * Decimal("5.00")
        ) / 1_000_000
        assert call.cost_usd == billed.quantize(Decimal("0.000001"))
