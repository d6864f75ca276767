"""Provider retries are counted by kind and shown per conversation, per run and per scoring
job, through both SDK adapters against the local fake server (nothing of ours mocked)."""

import pytest
from django.urls import reverse

from benchmark.models import ConversationStatus, ModelCall
from benchmark.services.inline import run_execute_inline
from jury.services import juries, scoring
from llm.clients import model_router
from tests.fakes.llm_server import (
    answer,
    malformed,
    rate_limited,
    running_fake_llm_server,
    server_error,
)
from tests.support.builders import enriched_set, launched_run, played

pytestmark = pytest.mark.django_db(transaction=True)
AGENTS = ["openai-compatible/agent-under-test", "anthropic/agent-under-test"]
JUDGE_ANSWER = '{"score": 4, "explanation": "Checked availability before booking."}'


@pytest.fixture
def fake(settings):
    with running_fake_llm_server(default_text="Could you tell me more?") as server:
        settings.OPENAI_COMPATIBLE_BASE_URL = server.compatible_base_url
        settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
        settings.LLM_MAX_RETRIES = 3
        model_router.cache_clear()
        yield server
    model_router.cache_clear()


def played_conversation(agent: str):
    run = launched_run(
        enriched_set(name="retries", size=1, sampler_seed=3), name="retries run",
        models=(agent,), roster_model="offline/patient", use_cache=False, max_turns=2,
    )  # fmt: skip
    run_execute_inline(run, threads=1)
    return run.conversations.get()


@pytest.mark.parametrize("agent", AGENTS)
def test_a_conversation_s_retries_are_counted_by_kind_and_shown(fake, admin_client_, agent):
    fake.script(rate_limited(retry_after="0"), server_error(503), malformed("{}"))

    conversation = played_conversation(agent)

    assert conversation.status == ConversationStatus.FINISHED
    counts = (
        conversation.retries_rate_limit, conversation.retries_server,
        conversation.retries_malformed, conversation.retries_timeout,
    )  # fmt: skip
    assert counts == (1, 1, 1, 0)
    first = ModelCall.objects.filter(conversation=conversation, purpose="assistant").first()
    assert (first.retries_rate_limit, first.retries_server, first.retries_malformed) == (1, 1, 1)
    answered = conversation.events.filter(kind="assistant_message").first()
    assert answered.retries == 3
    shown = "3 provider retries (1 rate limit, 1 server error, 1 malformed reply)"
    page = admin_client_.get(reverse("benchmark:conversation", args=[conversation.public_id]))
    assert shown in page.content.decode()
    assert "after 3 provider retries" in page.content.decode()
    run_page = admin_client_.get(reverse("benchmark:run", args=[conversation.run.pk]))
    assert shown in run_page.content.decode()


def test_a_call_that_failed_after_its_retries_still_counts_them(fake, admin_client_):
    fake.script(*[server_error(502)] * 4)  # the call and its three retries

    conversation = played_conversation(AGENTS[0])

    assert conversation.status == ConversationStatus.FAILED
    assert conversation.retries_server == 3
    assert "after 3 retries" in conversation.error
    run_page = admin_client_.get(reverse("benchmark:run", args=[conversation.run.pk]))
    assert "3 provider retries (3 server error)" in run_page.content.decode()


def test_an_offline_run_shows_no_provider_retries(admin_client_):
    run = played(launched_run(enriched_set(name="offline retries", size=1), name="offline"))

    page = admin_client_.get(reverse("benchmark:run", args=[run.pk])).content.decode()

    assert "no provider retries" in page


def test_a_scoring_job_counts_its_judges_retries_and_shows_them(fake, admin_client_):
    run = played(launched_run(enriched_set(name="judged", size=1), name="judged run"))
    jury = juries.jury_create(name="retrying judge", judges=["openai-compatible/judge"])
    job = scoring.scoring_launch(run=run, jury=jury, use_cache=False)
    fake.default_reply = answer(JUDGE_ANSWER)
    fake.script(rate_limited(retry_after="0"), rate_limited(retry_after="0"), server_error(500))
    fake.script(*[server_error(503)] * 4)  # the next judge call gives up after its retries

    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)

    scores = job.scores.all()
    assert sum(s.retries_rate_limit for s in scores) == 2
    assert sum(s.retries_server for s in scores) == 1 + 3
    assert scores.filter(status="error").count() == 1
    page = admin_client_.get(reverse("jury:job", args=[job.pk])).content.decode()
    assert "6 provider retries (2 rate limit, 4 server error)" in page
