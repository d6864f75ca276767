"""A run whose worker is SIGKILLed mid-run ends with the same traces and jury scores as an
undisturbed run of the same configuration.

Two runs of one configuration (set, models, agent configuration, repetitions, run seed and
clock; no response cache, so the second cannot replay the first) are played by real workers
on a real queue with the offline provider slowed down (OFFLINE_LATENCY_MS) so that work is in
flight: the first by a worker left alone, the second by a worker killed with SIGKILL while
conversations run, then by a fresh worker that takes up the run's watch. A jury of three
offline judges scores both runs through the workers. Re-running a conversation from its start
must change nothing a person could see: not one event, score or report figure.
"""

import signal

import pandas as pd
import pytest
from django.utils import timezone

from benchmark.models import ConversationStatus
from config import env
from jobs.models import JobStatus
from jury.models import JudgeScore, ScoreStatus
from jury.services import juries, reports, scoring
from tests.support.builders import enriched_set, launched_run
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
LATENCY_MS = 60
MODELS = ("offline/careful", "offline/careless")
JUDGES = ["offline/standard", "offline/strict", "offline/lenient"]
# What a person reads in a trace; ids, latencies and timestamps may differ between attempts.
EVENT_CONTENT = ("seq", "turn", "kind", "content", "tool_name", "arguments", "ok", "model_role")


def refreshed(job):
    job.refresh_from_db()
    return job


def twin_launcher():
    """Launches runs of one configuration; the second may be launched later (same clock)."""
    benchmark_set = enriched_set(name="twin set", size=1, sampler_seed=5)
    options = {"models": MODELS, "repetitions": 2, "seed": 42, "concurrency": 2, "use_cache": False}
    clock = timezone.now()
    return lambda name: launched_run(benchmark_set, name=name, clock=clock, **options)


def test_a_run_whose_worker_was_killed_scores_the_same_as_an_undisturbed_run(tmp_path, transport):
    launch = twin_launcher()
    calm = launch("undisturbed")
    extra = {
        "DATABASE_URL": test_database_url(),
        "CONVERSATION_LEASE_SECONDS": str(LEASE_SECONDS),
        "OFFLINE_LATENCY_MS": str(LATENCY_MS),
    }
    if transport:
        extra["REDIS_URL"] = transport
    environment = worker_env(tmp_path, **extra)
    app = client_app(env.celery_transport(transport, tmp_path / "queue"))

    worker = start_worker(environment, concurrency=4)
    try:
        app.send_task("benchmark.run_dispatch", args=[calm.pk])
        wait_for(lambda: refreshed(calm).status == JobStatus.FINISHED, timeout=90, what="run 1")
        # Launched only now, so the first run was played undisturbed to its end.
        crashed = launch("interrupted")
        assert crashed.config_hash == calm.config_hash
        app.send_task("benchmark.run_dispatch", args=[crashed.pk])
        wait_for(
            lambda: a_conversation_began_after_two_finished(crashed),
            timeout=60,
            what="some conversations finished and a fresh one running",
        )
    finally:
        stop_worker(worker, signal.SIGKILL)
    interrupted = set(
        crashed.conversations.filter(status=ConversationStatus.RUNNING).values_list("pk", flat=True)
    )
    assert interrupted

    # Latency only matters while there is something to interrupt.
    successor = start_worker({**environment, "OFFLINE_LATENCY_MS": "0"}, concurrency=4)
    try:
        # Nobody sends anything: the new worker takes up the run's watch.
        wait_for(lambda: refreshed(crashed).status == JobStatus.FINISHED, timeout=90, what="run 2")
        jury = juries.jury_create(name="three offline judges", judges=JUDGES)
        jobs = [
            scoring.scoring_launch(run=run, jury=jury, use_cache=False, concurrency=8)
            for run in (calm, crashed)
        ]
        for job in jobs:
            app.send_task("jobs.watch", args=["scoring", job.pk])
        wait_for(
            lambda: all(refreshed(job).status == JobStatus.FINISHED for job in jobs),
            timeout=90,
            what="both scoring jobs",
        )
    finally:
        stop_worker(successor)

    for run in (calm, crashed):
        assert set(run.conversations.values_list("status", flat=True)) == {"finished"}
    # The killed attempts were re-run from the start, once; the others ran once.
    attempts = dict(crashed.conversations.values_list("pk", "attempts"))
    assert {pk for pk, n in attempts.items() if n == 2} == interrupted
    assert {n for pk, n in attempts.items() if pk not in interrupted} == {1}
    assert traces(crashed) == traces(calm)
    assert score_table(jobs[1]) == score_table(jobs[0])
    assert all(len(s.attempts) == 1 for s in JudgeScore.objects.filter(job__in=jobs))
    pd.testing.assert_frame_equal(model_table(jobs[1]), model_table(jobs[0]))


def a_conversation_began_after_two_finished(run) -> bool:
    """A conversation started after the second one finished is running: it has its whole
    length ahead, so a SIGKILL sent now interrupts it (one merely running may be in its last
    write, and on a busy machine finish before the signal lands)."""
    finished = run.conversations.filter(status=ConversationStatus.FINISHED)
    ends = list(finished.order_by("finished_at").values_list("finished_at", flat=True)[:2])
    if len(ends) < 2:
        return False
    fresh = run.conversations.filter(status=ConversationStatus.RUNNING, started_at__gte=ends[1])
    return fresh.exists()


def conversation_key(conversation) -> tuple:
    return (conversation.entry.index, conversation.run_agent.label, conversation.repetition)


def traces(run) -> dict:
    """(case, agent, repetition) -> every event's content in order, and the final sandbox."""
    result = {}
    for conversation in run.conversations.select_related("entry", "run_agent"):
        events = list(conversation.events.order_by("seq").values_list(*EVENT_CONTENT))
        event_ids = list(conversation.events.values_list("event_id", flat=True))
        assert len(event_ids) == len(set(event_ids)) > 0  # no event stored twice
        result[conversation_key(conversation)] = (events, conversation.final_state_hash)
    return result


def score_table(job) -> dict:
    """(case, agent, repetition, rubric, judge) -> score, for a job every call of which is valid."""
    scores = job.scores.select_related("conversation__entry", "conversation__run_agent")
    assert set(scores.values_list("status", flat=True)) == {ScoreStatus.VALID}
    table = {
        (*conversation_key(s.conversation), s.rubric_version.rubric_id, s.judge_index): s.score
        for s in scores.select_related("rubric_version")
    }
    assert len(table) == scores.count() == 4 * 6 * len(JUDGES)
    return table


def model_table(job) -> pd.DataFrame:
    return reports.model_table(reports.Report(job))
