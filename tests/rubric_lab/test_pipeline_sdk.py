"""The pipeline through the real OpenAI and Anthropic SDKs against the local fake server.

The fake answers each stage with what the offline script answers for the same case, picked by
the stage's system prompt, so the dual track's two calls may arrive in either order."""

import json

import pytest

from benchmark.services import conversations
from rubric_lab.engine.pipeline import MODEL_STAGES
from rubric_lab.models import GenerationStatus
from rubric_lab.services import pipeline
from rubric_lab.services.knowledge import retriever_for
from tests.rubric_lab.stage_server import StageServer, case_marker, scripted_answers

pytestmark = pytest.mark.django_db


@pytest.fixture
def scripted(played_run):
    conversation = played_run.conversations.scorable().first()
    case = pipeline.case_of(conversation)
    return conversation, {case_marker(case): scripted_answers(case, retriever_for("bm25"))}


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"])
def test_a_rubric_is_generated_through_each_sdk(settings, scripted, model):
    conversation, answers = scripted
    server = StageServer(answers).start()
    try:
        settings.OPENAI_BASE_URL = server.openai_base_url
        settings.OPENAI_API_KEY = "sk-test-not-a-real-key"
        settings.ANTHROPIC_BASE_URL = server.anthropic_base_url
        settings.ANTHROPIC_API_KEY = "sk-ant-test-not-a-real-key"
        settings.LLM_MAX_RETRIES = 0
        conversations.model_router.cache_clear()
        job = pipeline.generation_job_launch(
            conversations=[conversation], generator_model=model, use_cache=False
        )
        generation = job.generations.get()
        assert pipeline.generation_execute(generation.pk)
    finally:
        server.stop()
        conversations.model_router.cache_clear()

    generation.refresh_from_db()
    assert generation.status == GenerationStatus.FINISHED, generation.failure_reason
    assert len(server.requests) == len(MODEL_STAGES)
    (audit,) = (stages["audit"] for stages in answers.values())
    assert generation.rubric.criteria.count() == len(json.loads(audit)["criteria"])
    routing = generation.stages.get(name="routing")
    assert routing.input_tokens == 11 and routing.output_tokens == 7  # the fake's usage
    sent = json.dumps([r.body for r in server.requests])
    assert "offline/careful" not in sent and "offline/careless" not in sent
