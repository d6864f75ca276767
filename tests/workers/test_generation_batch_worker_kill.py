"""A rubric generation job in batch mode (cache replay) survives its worker being SIGKILLed
while it reads a batch's results: a fresh worker's watch records every answer once, replays
the generations from them and sends only what was never sent.

A real worker (the embedded queue, or Redis) polls through the job's watch; the fake server
answers each pipeline stage of each case with the offline script's answer and SIGKILLs the
worker the second time a batch's results are read (a round in, before any of that batch's
answers is recorded). The second worker takes the job's poll lease once it runs out and
carries on: every rubric made, every batch made once, every answer paid once."""

import pytest
from django.db.models import Count

from benchmark.models import ModelCall
from config import env
from jobs.models import JobStatus, ProviderBatch, ReplayRequest, ReplayState
from rubric_lab.models import GenerationJob, GenerationStatus
from rubric_lab.services import generation_batches, pipeline
from rubric_lab.services.knowledge import retriever_for
from tests.rubric_lab.stage_server import StageServer, case_marker, scripted_answers
from tests.support.builders import enriched_set, launched_run, played
from tests.support.workers import client_app, fake_provider_env, killed_then_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
LEASE_SECONDS = 4
MODEL = "openai/gpt-4o-mini"
KIND = generation_batches.KIND


def test_a_batch_generation_job_killed_reading_results_loses_and_repays_nothing(
    tmp_path, transport
):
    run = played(launched_run(enriched_set(name="batch rubrics kill", size=2, sampler_seed=5)))
    conversations = list(run.conversations.scorable())
    answers = {}
    for conversation in conversations:
        case = pipeline.case_of(conversation)
        answers[case_marker(case)] = scripted_answers(case, retriever_for("bm25"))
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model=MODEL, run=run, batch=True
    )
    server = StageServer(answers).start()
    try:
        environment = fake_provider_env(
            tmp_path, transport, lease_seconds=LEASE_SECONDS,
            OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-test-not-a-real-key",
        )  # fmt: skip
        app = client_app(env.celery_transport(transport, tmp_path / "queue"))
        reads = []

        def at_the_second_read(kill):
            def read():
                reads.append(True)
                if len(reads) == 2:
                    kill()

            server.batches.on_results_read = read

        killed_then_finished(
            environment,
            send=lambda: app.send_task("jobs.watch", args=[KIND, job.pk]),
            arm=at_the_second_read,
            finished=lambda: GenerationJob.objects.get(pk=job.pk).status == JobStatus.FINISHED,
            when="reading results",
            timeout=240,
        )
        made = len(server.batches.created)
    finally:
        server.stop()

    generations = list(job.generations.all())
    assert {g.status for g in generations} == {GenerationStatus.FINISHED}
    assert all(g.rubric.criteria.exists() and g.lease_token == "" for g in generations)
    assert made == ProviderBatch.objects.filter(job_kind=KIND, job_id=job.pk).count()
    requests = ReplayRequest.objects.filter(job_kind=KIND, job_id=job.pk)
    assert set(requests.values_list("state", flat=True)) == {ReplayState.ANSWERED}
    # Each request sent once (none of the killed read's went out again), each answer paid once.
    assert requests.count() == sum(len(b.outcomes) for b in server.batches.created)
    paid = ModelCall.objects.filter(run=run, purpose__startswith="rubric_", cached=False)
    assert paid.count() == requests.count()
    assert not paid.values("answer_key").annotate(n=Count("id")).filter(n__gt=1).exists()
