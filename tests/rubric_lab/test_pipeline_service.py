"""The pipeline service end to end with the offline scripted provider, stage by stage."""

import pytest

from jobs.models import JobStatus
from rubric_lab.models import GenerationStatus, InstanceRubric, StageStatus
from rubric_lab.services import pipeline

pytestmark = pytest.mark.django_db


def launch(run, count=1, **options):
    conversations = list(run.conversations.scorable()[:count])
    return pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard", **options
    )


def execute_all(job):
    for generation_id in job.generations.values_list("pk", flat=True):
        assert pipeline.generation_execute(generation_id)
    job.refresh_from_db()
    return job


def test_the_pipeline_stores_every_stage_and_a_rubric_whose_criteria_cite_evidence(played_run):
    job = execute_all(launch(played_run))

    generation = job.generations.get()
    assert job.status == JobStatus.FINISHED
    assert generation.status == GenerationStatus.FINISHED
    names = list(generation.stages.values_list("name", flat=True))
    assert names == ["routing", "retrieval", "evidence", "facts", "intent", "synthesis", "audit"]
    routing = generation.stages.get(name="routing")
    assert routing.system_prompt and routing.user_prompt and routing.input_tokens > 0
    assert routing.output["queries"]
    rubric = generation.rubric
    fact_ids = {fact["id"] for fact in rubric.facts}
    cited = {passage["passage_id"] for passage in rubric.passages}
    for criterion in rubric.criteria.all():
        assert -10 <= criterion.weight <= 10 and criterion.weight != 0
        assert set(criterion.fact_ids) <= fact_ids
        assert set(criterion.passage_ids) <= cited
        assert criterion.fact_ids or criterion.intent_basis
    assert generation.input_tokens == sum(s.input_tokens for s in generation.stages.all())


def test_ablation_flags_skip_their_stages(played_run):
    job = execute_all(launch(played_run, skip_routing=True, skip_intent=True, skip_audit=True))

    stages = {s.name: s.status for s in job.generations.get().stages.all()}
    assert stages["routing"] == stages["intent"] == stages["audit"] == StageStatus.SKIPPED
    rubric = job.generations.get().rubric
    assert not any(c.intent_basis for c in rubric.criteria.all())


def test_a_generation_already_taken_is_not_run_twice(played_run):
    job = launch(played_run)
    generation_id = job.generations.get().pk
    assert pipeline.generation_execute(generation_id)
    assert not pipeline.generation_execute(generation_id)
    assert InstanceRubric.objects.filter(generation_id=generation_id).count() == 1


def test_launch_refuses_an_unknown_offline_behaviour(played_run):
    with pytest.raises(pipeline.PipelineLaunchError, match="offline/standard"):
        launch(played_run, judge_model="offline/carefull")
