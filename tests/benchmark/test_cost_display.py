"""Costs on the run and conversation pages: a role the cache answered shows as cached (it cost
nothing now), an unpriced one as unknown, never as $0 beside them."""

from decimal import Decimal

import pytest
from django.urls import reverse

from benchmark.models import ModelCall
from jobs.services.accounting import model_cost_rows, model_costs
from llm.engine.chat import ChatResponse, Usage

pytestmark = pytest.mark.django_db

UNPRICED = "openai-compatible/agent-under-test"


def rows_of(page: str, table_id: str) -> dict[str, str]:
    """The rows of one table, by their first cell's text."""
    table = page.split(f'id="{table_id}"')[1].split("</table>")[0]
    return {row.split("</td>")[0]: row for row in table.split("<tr><td>")[1:]}


def record(conversation, purpose: str, model: str, cost, *, cached=False) -> None:
    ModelCall.objects.create(
        run=conversation.run, conversation=conversation, purpose=purpose, model=model,
        cost_usd=cost, cached=cached, input_tokens=10, output_tokens=5,
    )  # fmt: skip


def test_the_run_page_says_cached_and_unknown_per_role_never_zero(researcher_client, run):
    conversation = run.conversations.first()
    record(conversation, "roster", "offline/patient", Decimal(0), cached=True)
    record(conversation, "assistant", UNPRICED, None)
    record(conversation, "patient", "offline/patient", Decimal("0.0125"))

    page = researcher_client.get(reverse("benchmark:run", args=[run.pk])).content.decode()

    rows = rows_of(page, "run-costs")
    assert ">cached<" in rows["roster"] and "$0.0000" not in rows["roster"]
    assert "unknown" in rows["assistant"]
    assert "$0.0125" in rows["patient"]


def test_the_run_progress_says_cached_when_the_cache_answered_every_call(researcher_client, run):
    conversation = run.conversations.first()
    record(conversation, "roster", "offline/patient", Decimal(0), cached=True)
    record(conversation, "assistant", "offline/careful", Decimal(0), cached=True)

    page = researcher_client.get(reverse("benchmark:run", args=[run.pk])).content.decode()

    progress = page.split('id="run-progress"')[1].split("</section>")[0]
    line = progress.split("Tokens")[1].split("</p>")[0]
    assert ">cached<" in line and "$0.0000" not in line


def test_a_conversation_answered_wholly_from_the_cache_costs_cached_not_zero(
    researcher_client, run
):
    conversation = run.conversations.first()
    record(conversation, "roster", "offline/patient", Decimal(0), cached=True)
    record(conversation, "assistant", "offline/careful", Decimal(0), cached=True)

    url = reverse("benchmark:conversation", args=[conversation.public_id])
    page = researcher_client.get(url).content.decode()

    section = page.split("Tokens and cost")[1].split("</table>")[0]
    assert section.count(">cached<") == 3  # both roles and the total
    assert "$0.0000" not in section


def test_stored_per_model_costs_add_up_with_cached_and_unknown_calls():
    def response(model, cost, cached=False):
        return ("judge", ChatResponse(text="", model=model, usage=Usage(10, 5), cost_usd=cost,
                                      cached=cached))  # fmt: skip

    first = model_costs([response("a/x", Decimal("0.1")), response("b/y", None)])
    second = model_costs([response("a/x", Decimal(0), cached=True), response("b/y", Decimal(1))])

    rows = {row["model"]: row for row in model_cost_rows([first, second])}
    assert rows["a/x"] == {"model": "a/x", "calls": 2, "cached": 1, "input_tokens": 20,
                           "output_tokens": 10, "cost": Decimal("0.1")}  # fmt: skip
    assert rows["b/y"]["cost"] is None  # one unpriced call makes the model's cost unknown
