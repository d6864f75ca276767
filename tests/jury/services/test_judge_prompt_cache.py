"""A Claude judge through the SDK against the fake, which simulates Anthropic's prompt cache:
the instructions and the rubric are the marked prefix, so two conversations scored on the same
rubric write it once and read it after; each score keeps its cache reads and writes and its
list cost, and the job page shows the list cost beside the cost with caching."""

import json

import pytest
from django.urls import reverse

from benchmark.services import conversations
from jury.services import juries, scoring
from tests.fakes.llm_server import answer, running_fake_llm_server

pytestmark = pytest.mark.django_db

JUDGE = "anthropic/claude-haiku-4-5"  # $1.00 input, $0.10 cache reads, $1.25 cache writes


@pytest.fixture
def caching_anthropic(settings):
    with running_fake_llm_server(prompt_cache=True) as server:
        settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
        settings.LLM_MAX_RETRIES = 0
        conversations.model_router.cache_clear()
        yield server
        conversations.model_router.cache_clear()


def test_the_second_conversation_on_a_rubric_reads_the_cached_instructions_and_rubric(
    played_run, caching_anthropic, researcher_client
):
    jury = juries.jury_create(name="Claude judge", judges=[JUDGE])
    job = scoring.scoring_launch(run=played_run, jury=jury, use_cache=False)
    first, second = played_run.conversations.scorable().order_by("pk")[:2]
    verdict = json.dumps({"score": 4, "explanation": "Booked and confirmed at #9."})
    caching_anthropic.script(*(answer(verdict) for _ in range(2)))

    rows = [
        job.scores.get(conversation=conversation, rubric_version__rubric_id="clinical_safety")
        for conversation in (first, second)
    ]
    for row in rows:
        assert scoring.judge_score_execute(row.pk)
        row.refresh_from_db()

    wrote, read = rows
    assert wrote.cache_write_tokens >= 1024 and wrote.cached_input_tokens == 0
    assert read.cached_input_tokens == wrote.cache_write_tokens and read.cache_write_tokens == 0
    assert read.cost_usd < read.list_cost_usd and wrote.cost_usd > wrote.list_cost_usd
    (costs,) = scoring.judge_costs(job)
    # Rows read back rounded to the field's 6 places; the database sums what it holds.
    both_list, both = wrote.list_cost_usd + read.list_cost_usd, wrote.cost_usd + read.cost_usd
    assert float(costs["list_cost"]) == pytest.approx(float(both_list), abs=2e-6)
    assert float(costs["cost"]) == pytest.approx(float(both), abs=2e-6)
    page = researcher_client.get(reverse("jury:job", args=[job.pk])).content.decode()
    table = page.split('id="judge-costs"')[1].split("</table>")[0]
    assert "List cost" in table and "Cost with caching" in table
    assert f"{both_list:.4f}" in table and f"{both:.4f}" in table
