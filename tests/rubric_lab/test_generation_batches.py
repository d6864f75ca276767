"""Rubric generation in batch mode (cache replay): each look replays the pending generations
from the response cache, the calls they miss go out in batches (offline scripts, and the real
OpenAI and Anthropic SDKs against the fake server), and a generation whose replay ends is
stored as the live path stores it; every answer is paid once, at the batch price."""

import pytest
from django.core.cache import caches
from django.db.models import Count

from benchmark.models import ModelCall
from jobs.models import BatchState, JobStatus, ProviderBatch, ReplayRequest, ReplayState
from jobs.services import replay_batches
from llm.clients import model_router
from rubric_lab.models import GenerationStatus, StageStatus
from rubric_lab.services import generation_batches, pipeline
from tests.fakes.llm_server import running_fake_llm_server

pytestmark = pytest.mark.django_db

KIND = generation_batches.KIND


@pytest.fixture(autouse=True)
def no_cached_answers():
    """Each test asks its batches afresh (an earlier test may have cached the same calls)."""
    caches["llm"].clear()


def launch(run, model="offline/standard", count=1, **options):
    conversations = list(run.conversations.scorable()[:count])
    return pipeline.generation_job_launch(
        conversations=conversations, generator_model=model, batch=True, **options
    )


def poll_until_done(job, *, polls=40):
    for _ in range(polls):
        generation_batches.generation_batch_poll(job)
        job.refresh_from_db()
        if job.status != JobStatus.RUNNING:
            return job
    raise AssertionError(f"the job still runs after {polls} polls")


def assert_each_answer_paid_once(job):
    calls = ModelCall.objects.filter(
        conversation__rubric_generations__job=job, purpose__startswith="rubric", cached=False
    )
    keys = calls.values("answer_key").annotate(n=Count("id"))
    assert calls.exists() and not keys.filter(n__gt=1).exists()
    answered = ReplayRequest.objects.filter(job_kind=KIND, job_id=job.pk)
    assert calls.count() == answered.filter(state=ReplayState.ANSWERED).count()


def test_an_offline_batch_job_makes_every_rubric_one_call_further_each_look(played_run):
    job = poll_until_done(launch(played_run, count=2))

    assert job.status == JobStatus.FINISHED
    generations = job.generations.all()
    assert {g.status for g in generations} == {GenerationStatus.FINISHED}
    for generation in generations:
        names = list(generation.stages.values_list("name", flat=True))
        assert names == ["routing", "retrieval", "evidence", "facts", "intent", "synthesis", "audit"]
        assert generation.rubric.criteria.exists()
    made = ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk)
    assert made.count() > 1  # the calls depend on each other: one batch per round
    assert set(made.values_list("state", flat=True)) == {BatchState.RECORDED}
    # Both conversations' calls of a round share its batch.
    assert max(len(batch.requests) for batch in made) >= 2
    assert_each_answer_paid_once(job)
