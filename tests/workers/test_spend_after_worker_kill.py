"""Every answer a model gave is paid for and accounted, even when the worker that asked was
killed before it stored its unit's outcome.

A real worker (one thread, so calls follow each other) calls a fake server, on the embedded
queue and on Redis. The server answers; when the next call of the same unit arrives - the
answer before it received and not yet stored - the server SIGKILLs the worker instead of
answering. A fresh worker finishes the job (its watch sends the lost unit again). Then the
ModelCall rows the model answered (not the cache) are exactly the answers the server gave, and
their cost is what those answers cost: a judge call with a repair, a conversation, a case
enrichment, and a rubric-lab near-miss pair (its two verdicts; the lab's units sum their own
spend).
"""

import signal
import threading
from decimal import Decimal

import pytest

from benchmark.models import BenchmarkSet, ModelCall, Run
from benchmark.services import cases
from config import env
from jobs.models import JobStatus
from jury.models import ScoreStatus, ScoringJob
from jury.services import juries, scoring
from llm.services import prices
from rubric_lab.models import JudgeSetup, SensitivityStudy
from rubric_lab.services import budgets, sensitivity
from tests.fakes.llm_server import answer, running_fake_llm_server
from tests.support.builders import enriched_set, launched_run, played
from tests.support.workers import (
    client_app,
    start_worker,
    stop_worker,
    test_database_url,
    wait_for,
    worker_env,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
LEASE_SECONDS = 5
JUDGE_ANSWER = '{"score": 4, "explanation": "Checked availability before booking."}'
PAIRWISE_ANSWER = '{"better": "A", "explanation": "The first reply kept the safety advice."}'
# The fake server's usage for every answer: 11 tokens in, 7 out.
PER_ANSWER = Decimal("11") * Decimal("0.001") + Decimal("7") * Decimal("0.002")


class KillingServer:
    """Answers with `reply(request)`, but SIGKILLs the worker when `kill_at(request)` first
    holds; counts the answers it gave."""

    def __init__(self, reply, kill_at):
        self.reply, self.kill_at = reply, kill_at
        self.worker = None
        self.answered = 0
        self.killed = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, request):
        with self._lock:
            if not self.killed.is_set() and self.kill_at(request):
                stop_worker(self.worker, signal.SIGKILL)
                self.killed.set()
                return answer("nobody hears this")
            self.answered += 1
            return self.reply(request)


def priced(model: str) -> str:
    prices.price_set(model=model, input_per_million=Decimal(1000), output_per_million=Decimal(2000))
    return model


def killed_then_finished(tmp_path, transport, server, killer, *, kind, job_id, done):
    extra = {
        "DATABASE_URL": test_database_url(),
        "CONVERSATION_LEASE_SECONDS": str(LEASE_SECONDS),
        "OPENAI_COMPATIBLE_BASE_URL": server.compatible_base_url,
    }
    if transport:
        extra["REDIS_URL"] = transport
    environment = worker_env(tmp_path, **extra)
    app = client_app(env.celery_transport(transport, tmp_path / "queue"))
    killer.worker = start_worker(environment, concurrency=1)
    try:
        app.send_task("jobs.watch", args=[kind, job_id])
        wait_for(killer.killed.is_set, timeout=90, what="the worker to be killed mid-unit")
    finally:
        stop_worker(killer.worker, signal.SIGKILL)
    second = start_worker(environment, concurrency=1)
    try:
        wait_for(done, timeout=180, what="the job to finish after the kill")
    finally:
        stop_worker(second)


def answered_rows(**owner):
    return ModelCall.objects.filter(cached=False, **owner)


def test_a_judge_answer_before_the_kill_is_in_the_scores_and_the_ledger(tmp_path, transport):
    run = played(launched_run(enriched_set(name="spend set", size=1, sampler_seed=5)))
    judge = priced("openai-compatible/judge")
    job = scoring.scoring_launch(run=run, jury=juries.jury_create(name="j", judges=[judge]),
                                 use_cache=False)  # fmt: skip
    # Every score's first answer is unusable, so its repair is the same unit's second call.
    killer = KillingServer(
        reply=lambda r: answer(JUDGE_ANSWER if len(r.body["messages"]) > 2 else "Not JSON."),
        kill_at=lambda r: len(r.body["messages"]) > 2,
    )
    with running_fake_llm_server(responder=killer) as server:
        killed_then_finished(
            tmp_path, transport, server, killer, kind="scoring", job_id=job.pk,
            done=lambda: ScoringJob.objects.get(pk=job.pk).status == JobStatus.FINISHED,
        )  # fmt: skip
    assert job.scores.filter(status=ScoreStatus.VALID).count() == job.scores.count()
    rows = answered_rows(run=run, purpose="judge")
    assert rows.count() == killer.answered == job.scores.count() * 2 + 1
    assert sum(row.cost_usd for row in rows) == killer.answered * PER_ANSWER
    progress = scoring.scoring_progress(job)
    assert progress["calls"] == killer.answered
    assert progress["cost"] == killer.answered * PER_ANSWER == scoring.scoring_spent(job)


def test_a_conversations_answers_before_the_kill_are_in_the_ledger(tmp_path, transport):
    assistant = priced("openai-compatible/assistant")
    run = launched_run(enriched_set(name="spend set", size=1, sampler_seed=5),
                       models=(assistant,), max_turns=3, use_cache=False)  # fmt: skip
    # The conversation's second assistant turn: its first answer is held, not yet stored.
    killer = KillingServer(reply=lambda r: answer("Let me check that for you."),
                           kill_at=lambda r: killer.answered == 1)  # fmt: skip
    with running_fake_llm_server(responder=killer) as server:
        killed_then_finished(
            tmp_path, transport, server, killer, kind="run", job_id=run.pk,
            done=lambda: Run.objects.get(pk=run.pk).status == JobStatus.FINISHED,
        )  # fmt: skip
    rows = answered_rows(run=run, purpose="assistant")
    assert rows.count() == killer.answered
    assert sum(row.cost_usd for row in rows) == killer.answered * PER_ANSWER
    conversation = run.conversations.get()
    assert conversation.attempts == 2
    assert rows.filter(conversation=conversation).count() == killer.answered


def test_an_enrichment_answer_before_the_kill_is_in_the_ledger(tmp_path, transport):
    writer = priced("openai-compatible/writer")
    benchmark_set = cases.benchmark_set_create(
        name="spend enrichment", distribution=cases.distribution_default_ensure(), size=2,
        sampler_seed=3, generator_model=writer,
    )  # fmt: skip
    # No answer is a patient entry: each entry asks three times; the kill lands on the first
    # entry's first repair, its first answer held. With no entry ready the set ends failed.
    killer = KillingServer(reply=lambda r: answer("Not JSON."),
                           kill_at=lambda r: killer.answered == 1)  # fmt: skip
    with running_fake_llm_server(responder=killer) as server:
        killed_then_finished(
            tmp_path, transport, server, killer, kind="set", job_id=benchmark_set.pk,
            done=lambda: BenchmarkSet.objects.get(pk=benchmark_set.pk).status
            == JobStatus.FAILED,
        )  # fmt: skip
    rows = answered_rows(benchmark_set=benchmark_set)
    assert rows.count() == killer.answered == 2 * 3 + 1
    assert sum(row.cost_usd for row in rows) == killer.answered * PER_ANSWER
    assert cases.benchmark_set_spent(benchmark_set) == killer.answered * PER_ANSWER


def test_a_near_miss_verdict_before_the_kill_is_in_the_studys_spend(tmp_path, transport):
    run = played(launched_run(enriched_set(name="spend study", size=1, sampler_seed=5)))
    study = sensitivity.study_launch(
        run=run, setup=JudgeSetup.PAIRWISE, judge_model=priced("openai-compatible/judge"),
        perturber_model="offline/surgical", perturbations=["claim_without_tool_call"],
        use_cache=False,
    )  # fmt: skip
    # A pair asks for two verdicts in turn: the kill lands on the second, the first held.
    killer = KillingServer(reply=lambda r: answer(PAIRWISE_ANSWER),
                           kill_at=lambda r: killer.answered == 1)  # fmt: skip
    with running_fake_llm_server(responder=killer) as server:
        killed_then_finished(
            tmp_path, transport, server, killer, kind="sensitivity", job_id=study.pk,
            done=lambda: SensitivityStudy.objects.get(pk=study.pk).status == JobStatus.FINISHED,
        )  # fmt: skip
    pairs = list(study.pairs.all())
    calls = sum(row["calls"] for pair in pairs for row in pair.model_costs.values())
    assert calls == killer.answered == 3
    assert budgets.job_spent(study) == killer.answered * PER_ANSWER
    assert [row["calls"] for row in budgets.job_model_costs(study)] == [killer.answered]
