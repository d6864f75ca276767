"""Bad model output at any stage is stored as that stage's failure with its reason, and the
generation keeps no rubric - never half of one."""

from dataclasses import replace

import pytest

from llm.engine.chat import ProviderError
from llm.engine.providers.offline import OfflineProvider
from rubric_lab.engine.pipeline import MODEL_STAGES
from rubric_lab.models import GenerationStatus, InstanceRubric, RubricCriterion, StageStatus
from rubric_lab.services import pipeline

pytestmark = pytest.mark.django_db

BAD_ANSWERS = {
    "routing": '{"queries": []}',
    "evidence": '{"evidence": [{"id": "e1", "statement": "x", "kind": "recommendation", '
    '"passage_ids": ["not-retrieved"]}]}',
    "facts": '{"facts": [{"id": "f1", "text": "x", "evidence_ids": ["e99"]}]}',
    "intent": '{"persona": "p", "urgency": "whenever", "uncertainty": "u", '
    '"missing_context": [], "tone": "t"}',
    "synthesis": '{"criteria": [{"text": "Be nice", "axis": "safety", "weight": 25, '
    '"fact_ids": ["f1"], "intent_basis": []}]}',
    "audit": "I reviewed the rubric and it looks fine to me.",
}
REASONS = {
    "routing": '"queries" must hold 1-6 items',
    "evidence": "unknown: not-retrieved",
    "facts": "unknown: e99",
    "intent": "urgency must be one of",
    "synthesis": "weight 25 must lie in",
    "audit": "No complete JSON object",
}


class BadAt:
    """The offline provider, except one stage always answers `text` (or raises)."""

    def __init__(self, stage, text=None, error=None):
        self.offline = OfflineProvider("standard")
        self.stage, self.text, self.error = stage, text, error
        self.calls = 0

    def chat(self, request):
        response = self.offline.chat(request)
        if request.purpose != f"rubric_{self.stage}":
            return response
        self.calls += 1
        if self.error:
            raise self.error
        return replace(response, text=self.text)


def generate_with(played_run, client):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/standard"
    )
    generation = job.generations.get()
    assert pipeline.generation_execute(generation.pk, client=client)
    generation.refresh_from_db()
    job.refresh_from_db()
    return job, generation


@pytest.mark.parametrize("stage", MODEL_STAGES)
def test_bad_output_at_a_stage_fails_the_generation_with_its_reason(played_run, stage):
    client = BadAt(stage, BAD_ANSWERS[stage])
    job, generation = generate_with(played_run, client)

    assert generation.status == GenerationStatus.FAILED
    assert generation.failed_stage == stage
    assert REASONS[stage] in generation.failure_reason
    failed = generation.stages.get(name=stage)
    assert failed.status == StageStatus.FAILED and REASONS[stage] in failed.error
    assert [a["text"] for a in failed.attempts] == [BAD_ANSWERS[stage]] * 2  # one repair turn
    assert client.calls == 2
    assert not InstanceRubric.objects.filter(generation=generation).exists()
    assert not RubricCriterion.objects.exists()
    assert job.status == "failed"


def test_a_provider_fault_is_stored_as_the_stage_failure(played_run):
    fault = ProviderError("upstream said 503", kind="server")
    _, generation = generate_with(played_run, BadAt("synthesis", error=fault))
    assert generation.failed_stage == "synthesis"
    assert "provider error (server)" in generation.failure_reason
    assert list(generation.stages.values_list("name", flat=True))[-1] == "synthesis"


def test_a_failing_track_keeps_the_other_tracks_record(played_run):
    _, generation = generate_with(played_run, BadAt("intent", BAD_ANSWERS["intent"]))
    stages = dict(generation.stages.values_list("name", "status"))
    assert stages["facts"] == StageStatus.OK and stages["intent"] == StageStatus.FAILED
    assert "synthesis" not in stages


def test_a_repair_turn_that_fixes_the_answer_gives_a_rubric(played_run):
    conversation = played_run.conversations.scorable().first()
    job = pipeline.generation_job_launch(
        conversations=[conversation], generator_model="offline/flaky"
    )
    generation = job.generations.get()
    pipeline.generation_execute(generation.pk)
    generation.refresh_from_db()
    assert generation.status == GenerationStatus.FINISHED
    assert all(
        len(s.attempts) == 2 for s in generation.stages.exclude(name__in=["retrieval", "audit"])
    )
    audit = generation.stages.get(name="audit")
    assert len(audit.attempts) == 2 * len(audit.output["rounds"])  # a repair turn per round
