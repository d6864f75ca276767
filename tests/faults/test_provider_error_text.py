"""A provider's error text reaches people and the log without keys or Python internals.

The fake server answers 401 with a body that repeats the key it was sent, the way OpenAI
does ("Incorrect API key provided: sk-proj-..."), through both SDKs: enrichment, roster
generation, the agent under test and two judges all fail that way. No stored text, page,
export or log line may then hold a key. A reply the SDK cannot parse reaches people as one
plain sentence naming the model; the exception and its traceback stay in the log.
"""

import logging
import re

import pytest
from django.apps import apps
from django.db import models
from django.urls import reverse

from benchmark.models import ConversationStatus, EntryStatus
from benchmark.services import cases
from benchmark.services.inline import run_execute_inline
from jury.models import Jury, ScoreStatus
from jury.services import scoring
from jury.services.rubrics import current_weights
from llm.clients import model_router
from tests.fakes.llm_server import FakeReply, malformed, running_fake_llm_server
from tests.support.builders import enriched_set, launched_run

OPENAI_KEY = "sk-proj-Zq81xVbT4mW0cR7nLp2sKd9fHj6gYa3e"
ANTHROPIC_KEY = "sk-ant-api03-Jt5Rw8Qe1Yu4Io7Pa0Sd3Fg6Hk9LzXc"
# Either key, or any other OpenAI / Anthropic style key, whole or masked.
KEY_LIKE = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9*_\-]{6,}")


def echoing_unauthorised(request) -> FakeReply:
    """401 with the key of the request in the message, as a provider or a proxy may word it."""
    headers = {name.lower(): value for name, value in request.headers.items()}
    key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    return FakeReply(
        status=401,
        error_message=(
            f"Incorrect API key provided: {key}. You can find your API key at "
            f"https://platform.openai.com/account/api-keys. (Authorization: Bearer {key})"
        ),
    )


@pytest.fixture
def keyed_server(settings, caplog):
    caplog.set_level(logging.DEBUG)
    with running_fake_llm_server(responder=echoing_unauthorised) as server:
        settings.OPENAI_API_KEY, settings.ANTHROPIC_API_KEY = OPENAI_KEY, ANTHROPIC_KEY
        settings.OPENAI_BASE_URL = server.openai_base_url
        settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
        settings.LLM_MAX_RETRIES = 1
        model_router.cache_clear()
        yield server
    model_router.cache_clear()


def fail_everything() -> dict:
    """Every kind of work fails on the key-echoing 401: an entry, two conversations and the
    judge calls of a scoring job (run in the test, so that its log is the test's)."""
    failed_set = cases.benchmark_set_create(
        name="keys", distribution=cases.distribution_default_ensure(), size=1,
        sampler_seed=5, generator_model="openai/generator-x",
    )  # fmt: skip
    for entry_id in cases.pending_entry_ids(failed_set):
        cases.entry_enrich(entry_id)
    good_set = enriched_set(name="good", size=1)
    roster_run = launched_run(
        good_set, name="roster run", roster_model="openai/roster-x", use_cache=False
    )
    agent_run = launched_run(
        good_set, name="agent run", models=("anthropic/agent-x",), use_cache=False, max_turns=2
    )
    scored_run = launched_run(good_set, name="scored run", max_turns=2)
    for run in (roster_run, agent_run, scored_run):
        run_execute_inline(run, threads=1)
    jury = Jury.objects.create(
        name="keyed jury", judges=["openai/judge-x", "anthropic/judge-y"],
        weights=current_weights(),
    )  # fmt: skip
    job = scoring.scoring_launch(run=scored_run, jury=jury, use_cache=False)
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    return {"set": failed_set, "runs": (roster_run, agent_run), "job": job}


def test_no_stored_text_page_or_log_line_holds_a_key(
    client, admin_user, keyed_server, caplog, transactional_db
):
    failed_everywhere = fail_everything()
    sent = " ".join(value for r in keyed_server.requests for value in r.headers.values())
    assert OPENAI_KEY in sent and ANTHROPIC_KEY in sent  # both SDKs really sent their key
    entry = failed_everywhere["set"].entries.get()
    roster_run, agent_run = failed_everywhere["runs"]
    job = failed_everywhere["job"]
    assert entry.status == EntryStatus.FAILED and "401" in entry.failure_reason
    for run in (roster_run, agent_run):
        assert run.conversations.get().status == ConversationStatus.FAILED
    assert set(job.scores.values_list("status", flat=True)) == {ScoreStatus.ERROR}
    assert "[redacted]" in entry.failure_reason  # the message is kept, the key is not

    assert key_like_texts_stored() == []
    client.force_login(admin_user)
    urls = [
        reverse("benchmark:set", args=[failed_everywhere["set"].pk]),
        reverse("benchmark:entry", args=[entry.pk]),
        reverse("jury:job", args=[job.pk]),
        reverse("jury:reports"),
    ]
    for run in (roster_run, agent_run):
        conversation = run.conversations.get()
        urls += [
            reverse("benchmark:run", args=[run.pk]),
            reverse("benchmark:run_export", args=[run.pk]),
            reverse("benchmark:conversation", args=[conversation.public_id]),
        ]
    pages = {url: body_of(client.get(url)) for url in urls}
    assert [url for url, body in pages.items() if KEY_LIKE.search(body)] == []
    assert "HTTP 401" in pages[urls[0]]  # the set page does show the failure
    # The roster failure and the 401s are logged, never with the key.
    assert "roster generation" in caplog.text
    assert KEY_LIKE.findall(caplog.text) == []


def test_a_reply_the_sdk_cannot_read_reaches_people_as_a_plain_sentence(
    client, admin_user, settings, caplog, transactional_db
):
    caplog.set_level(logging.WARNING)
    with running_fake_llm_server() as server:
        settings.ANTHROPIC_API_KEY, settings.ANTHROPIC_BASE_URL = "test-key", server.url
        settings.LLM_MAX_RETRIES = 1
        model_router.cache_clear()
        # "content" must be a list of blocks: the SDK hands the string on, and reading a
        # block's type off a character raises AttributeError inside the adapter.
        server.script(*[malformed('{"content": "not a list of blocks", "usage": {}}')] * 2)
        run = launched_run(
            enriched_set(name="shape", size=1), models=("anthropic/agent-x",), use_cache=False
        )
        run_execute_inline(run, threads=1)
    model_router.cache_clear()
    conversation = run.conversations.get()
    assert conversation.error == (
        "assistant model call failed: provider error (malformed, after 1 retry): "
        "the reply from anthropic/agent-x was not in the expected shape"
    )
    client.force_login(admin_user)
    page = body_of(client.get(reverse("benchmark:conversation", args=[conversation.public_id])))
    assert "was not in the expected shape" in page
    for internal in ("AttributeError", "has no attribute", "Traceback"):
        assert internal not in page
        assert internal not in " ".join(conversation.events.values_list("content", flat=True))
    # The log keeps what a developer needs.
    assert "AttributeError: 'str' object has no attribute 'type'" in caplog.text
    assert "Traceback (most recent call last)" in caplog.text


def body_of(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode()


def key_like_texts_stored() -> list[str]:
    """Every text and JSON column of every model holding something key-like."""
    found = []
    for model in apps.get_models():
        columns = [
            field.name
            for field in model._meta.concrete_fields
            if isinstance(field, models.TextField | models.CharField | models.JSONField)
        ]
        for row in model.objects.values("pk", *columns) if columns else []:
            found += [
                f"{model._meta.label}.{name} #{row['pk']}"
                for name in columns
                if KEY_LIKE.search(str(row[name]))
            ]
    return found
