"""The pipeline through the real OpenAI and Anthropic SDKs against the local fake server.

The fake answers each stage with what the offline script answers for the same case, picked by
the stage's system prompt, so the dual track's two calls may arrive in either order."""

import json

import pytest

from benchmark.engine.providers.offline import OfflineProvider
from benchmark.services import conversations
from rubric_lab.engine.pipeline import MODEL_STAGES, PipelineOptions, run_pipeline
from rubric_lab.models import GenerationStatus
from rubric_lab.services import pipeline
from rubric_lab.services.knowledge import retriever_for
from tests.fakes.llm_server import FakeLLMServer, answer

pytestmark = pytest.mark.django_db

OPENINGS = {
    "routing": "You plan the evidence search",
    "evidence": "You consolidate retrieved",
    "facts": "You build the reference board",
    "intent": "You read what a patient needs",
    "synthesis": "You write an instance-specific rubric",
    "audit": "You audit a draft",
}


class StageAwareServer(FakeLLMServer):
    def __init__(self, answers):
        super().__init__()
        self.answers = answers

    def _next_reply(self, request):
        super()._next_reply(request)
        sent = json.dumps(request.body)
        stage = next(name for name, opening in OPENINGS.items() if opening in sent)
        return answer(self.answers[stage])


class Recorder:
    def __init__(self):
        self.offline = OfflineProvider("standard")
        self.answers = {}

    def chat(self, request):
        response = self.offline.chat(request)
        self.answers[request.purpose.removeprefix("rubric_")] = response.text
        return response


@pytest.fixture
def scripted_answers(played_run):
    conversation = played_run.conversations.scorable().first()
    recorder = Recorder()
    outcome = run_pipeline(
        recorder, pipeline.case_of(conversation), retriever_for("bm25"),
        PipelineOptions(model="offline/standard"),
    )  # fmt: skip
    assert outcome.ok
    return conversation, recorder.answers


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"])
def test_a_rubric_is_generated_through_each_sdk(settings, scripted_answers, model):
    conversation, answers = scripted_answers
    server = StageAwareServer(answers).start()
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
    assert generation.rubric.criteria.count() == len(json.loads(answers["audit"])["criteria"])
    routing = generation.stages.get(name="routing")
    assert routing.input_tokens == 11 and routing.output_tokens == 7  # the fake's usage
    sent = json.dumps([r.body for r in server.requests])
    assert "offline/careful" not in sent and "offline/careless" not in sent
