"""A real SDK judge (openai/...) scoring against the local fake server: no network."""

import json

import pytest

from benchmark.services import conversations
from jury.models import ScoreStatus
from jury.services import juries, scoring
from tests.fakes.llm_server import answer, running_fake_llm_server

pytestmark = pytest.mark.django_db

JUDGE = "openai/gpt-4o-mini"


@pytest.fixture
def fake_openai(settings):
    with running_fake_llm_server(default_text="Looks fine to me.") as server:
        settings.OPENAI_BASE_URL = server.openai_base_url
        settings.OPENAI_API_KEY = "sk-test-not-a-real-key"
        settings.LLM_MAX_RETRIES = 0
        conversations.model_router.cache_clear()
        yield server
        conversations.model_router.cache_clear()


def rows_of(job, conversation):
    return job.scores.filter(conversation=conversation).order_by("rubric_version__order")


def test_an_openai_judge_scores_a_conversation_through_the_sdk(played_run, fake_openai):
    jury = juries.jury_create(name="SDK judge", judges=[JUDGE])
    job = scoring.scoring_launch(run=played_run, jury=jury, use_cache=False)
    target = played_run.conversations.scorable().first()
    verdict = {"score": 4, "explanation": "The visit was booked and confirmed at #9."}
    fake_openai.script(*(answer(json.dumps(verdict)) for _ in range(6)))

    for row in rows_of(job, target):
        assert scoring.judge_score_execute(row.pk)

    rows = list(rows_of(job, target))
    assert {(r.status, r.score) for r in rows} == {(ScoreStatus.VALID, 4)}
    assert all(r.cost_usd is not None and r.cost_usd > 0 for r in rows)
    assert len(fake_openai.requests) == 6
    body = fake_openai.requests[0].body
    assert body["model"] == "gpt-4o-mini"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    sent = json.dumps(body)
    assert "offline/careful" not in sent and "offline/careless" not in sent
    assert target.jury_results.get(job=job).complete


def test_an_sdk_judge_that_never_answers_in_json_is_invalid_with_its_raw_text(
    played_run, fake_openai
):
    jury = juries.jury_create(name="Chatty judge", judges=[JUDGE])
    job = scoring.scoring_launch(run=played_run, jury=jury, use_cache=False)
    target = played_run.conversations.scorable().first()

    for row in rows_of(job, target):
        scoring.judge_score_execute(row.pk)

    rows = list(rows_of(job, target))
    assert {(r.status, r.score, r.invalid_reason) for r in rows} == {
        (ScoreStatus.INVALID, None, "no_json")
    }
    assert rows[0].raw_output == "Looks fine to me."
    assert [a["text"] for a in rows[0].attempts] == ["Looks fine to me."] * 2
    repair = fake_openai.requests[1].body["messages"]
    assert repair[-1]["role"] == "user" and "could not be used" in repair[-1]["content"]
    # The judge's structured output carried the answer's schema; the repair turns are counted.
    schema = fake_openai.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["score", "explanation"]
    (costs,) = scoring.judge_costs(job)
    assert (costs["calls"], costs["repairs"]) == (12, 6)  # six rubrics, one repair each
    result = target.jury_results.get(job=job)
    assert not result.complete and result.aggregate is None


@pytest.mark.parametrize("judge", [JUDGE, "anthropic/claude-haiku-4-5"])
def test_retrying_an_invalid_answer_asks_the_judge_again_with_the_cache_on(
    played_run, fake_openai, settings, judge
):
    settings.ANTHROPIC_BASE_URL = fake_openai.anthropic_base_url
    settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
    jury = juries.jury_create(name="Cached judge", judges=[judge])
    job = scoring.scoring_launch(run=played_run, jury=jury, use_cache=True)
    row = rows_of(job, played_run.conversations.scorable().first()).first()
    scoring.judge_score_execute(row.pk)  # prose twice: invalid, both answers cached
    row.refresh_from_db()
    assert row.status == ScoreStatus.INVALID and len(fake_openai.requests) == 2
    verdict = {"score": 3, "explanation": "Booked without confirming the time."}
    fake_openai.script(answer(json.dumps(verdict)))

    scoring.scoring_relaunch(job)
    scoring.judge_score_execute(row.pk)

    row.refresh_from_db()
    assert (row.status, row.score, row.cached) == (ScoreStatus.VALID, 3, False)
    assert len(fake_openai.requests) == 3  # the judge was asked again, not the cache
