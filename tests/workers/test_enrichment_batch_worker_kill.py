"""A set enriched in batch mode survives its worker being SIGKILLed in the one window where a
batch could be paid twice: after the provider made the batch and before the worker stored
its id. A fresh worker's watch finds the batch among the provider's own (by the input file
and the tag in its metadata), adopts it and records its answers: one batch made, every entry
ready, one accounting row per entry."""

import pytest

from benchmark.models import BenchmarkSet, EntryStatus, ModelCall
from benchmark.services import cases
from config import env
from jobs.models import BatchState, JobStatus, ProviderBatch
from tests.fakes.llm_server import running_fake_llm_server
from tests.support.builders import entry_answers
from tests.support.workers import client_app, fake_provider_env, killed_then_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
LEASE_SECONDS = 4
MODEL = "openai/gpt-4o-mini"


# The embedded queue only: the Redis leg adds nothing to what is tested here.
@pytest.mark.parametrize("transport", [None])
def test_a_batch_made_as_its_worker_died_is_adopted_and_paid_once(tmp_path, transport):
    benchmark_set = cases.benchmark_set_create(
        name="batch kill", distribution=cases.distribution_default_ensure(), size=3,
        sampler_seed=21, generator_model=MODEL, batch=True,
    )  # fmt: skip
    with running_fake_llm_server() as server:
        server.responder = entry_answers(benchmark_set)
        environment = fake_provider_env(
            tmp_path, transport, lease_seconds=LEASE_SECONDS,
            OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-test-not-a-real-key",
        )  # fmt: skip
        app = client_app(env.celery_transport(transport, tmp_path / "queue"))
        orphans = []

        def the_orphan_is_left_submitting():
            orphans[:] = ProviderBatch.objects.filter(job_kind="set", job_id=benchmark_set.pk)
            [orphan] = orphans
            assert orphan.state == BatchState.SUBMITTING and orphan.input_file_id

        killed_then_finished(
            environment,
            send=lambda: app.send_task("jobs.watch", args=["set", benchmark_set.pk]),
            arm=lambda kill: setattr(server.batches, "on_created", kill),
            between=the_orphan_is_left_submitting,
            finished=lambda: (
                BenchmarkSet.objects.get(pk=benchmark_set.pk).status == JobStatus.FINISHED
            ),
            when="making the batch",
        )
        made = [batch.id for batch in server.batches.created]

    [orphan] = orphans
    orphan.refresh_from_db()
    assert made == [orphan.batch_id] and orphan.state == BatchState.RECORDED
    assert ProviderBatch.objects.filter(job_id=benchmark_set.pk).count() == 1
    assert set(benchmark_set.entries.values_list("status", flat=True)) == {EntryStatus.READY}
    assert ModelCall.objects.filter(benchmark_set=benchmark_set).count() == 3
