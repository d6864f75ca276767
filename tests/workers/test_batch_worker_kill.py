"""A scoring job in batch mode survives its worker being SIGKILLed while it reads a batch's
results: a fresh worker's watch records every answer once, and the provider is asked once.

A real worker (the embedded queue and Redis) polls through the job's watch; the fake server
SIGKILLs it the first time a batch's results are read, after the batch ended and before any
answer was recorded. The second worker takes the job's poll lease once it runs out and
records the same batch: every score valid, one batch made, one accounting row per score."""

import pytest

from benchmark.models import ModelCall
from config import env
from jobs.models import JobStatus, ProviderBatch
from jury.models import ScoreStatus, ScoringJob
from jury.services import juries, scoring
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import enriched_set, launched_run, played
from tests.support.workers import client_app, fake_provider_env, killed_then_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
LEASE_SECONDS = 4
JUDGE = "openai/gpt-4o-mini"
JUDGE_ANSWER = '{"score": 4, "explanation": "Checked availability before booking."}'


def test_a_batch_job_killed_while_reading_results_loses_and_repays_nothing(tmp_path, transport):
    run = played(launched_run(enriched_set(name="batch kill", size=1, sampler_seed=5)))
    jury = juries.jury_create(name="batch judges", judges=[JUDGE])
    job = scoring.scoring_launch(run=run, jury=jury, use_cache=False, batch=True)
    with running_fake_llm_server(default_text=JUDGE_ANSWER) as server:
        environment = fake_provider_env(
            tmp_path, transport, lease_seconds=LEASE_SECONDS,
            OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-test-not-a-real-key",
        )  # fmt: skip
        app = client_app(env.celery_transport(transport, tmp_path / "queue"))
        killed_then_finished(
            environment,
            send=lambda: app.send_task("jobs.watch", args=["scoring", job.pk]),
            arm=lambda kill: setattr(server.batches, "on_results_read", kill),
            finished=lambda: ScoringJob.objects.get(pk=job.pk).status == JobStatus.FINISHED,
            when="reading results",
        )
        made = len(server.batches.created)

    assert job.scores.filter(status=ScoreStatus.VALID).count() == job.scores.count()
    assert made == 1 and ProviderBatch.objects.filter(job_id=job.pk).count() == 1
    assert set(job.scores.values_list("calls", flat=True)) == {1}
    assert ModelCall.objects.filter(run=run, purpose="judge").count() == job.scores.count()
