"""Batch scoring at scale: a scoring job of 10,008 judge calls (834 conversations x 6 rubrics x
2 judges, one through OpenAI's Batch API and one through Anthropic's Message Batches, both
spoken by the fake server in a process of its own; each batch is in progress at its first look,
and the first batch expires with only 1,000 of its requests answered) on a fresh SQLite
database. The batches are polled by a poller process (the loop the job's watch runs:
`scoring_batches.scoring_batch_poll`), which is SIGKILLed once 30% of the calls are recorded; a
second poller takes over when the first one's lease runs out. The conversations are copies of
an 8-case offline run's (their judge prompts are real; copies keep it fast). Measured: calls
lost (not valid at the end), calls paid twice (provider-side answered requests, summed over
every batch, beyond one per call; and accounting rows beyond one per call), and the wall time.
Target: 0 and 0.

The paper configuration's bill with batches and prompt caching against the list price is
measured by bench/bench_forecast.py.

Run directly (`python bench/bench_batch.py`) or from bench/run_all.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

TIMEOUT_SECONDS = 1500
PILOT_CASES = 8
COPIES = 105  # 8 cases x 1 agent x 105 copies = 840 conversations, 834 of them scored
CONVERSATIONS = 834
JUDGES = ("openai/bench-judge-a", "anthropic/bench-judge-b")  # "judge": the fake's judge
EXPIRED_ANSWERED = 1_000
KILL_AT = 0.3
LEASE_SECONDS = 20
POLL_SECONDS = 0.5
DEADLINE_SECONDS = 1200
POLLER_FLAG = "--poller"


def run() -> list[dict]:
    from bench import fake_server
    from bench.django_setup import django_on_fresh_sqlite

    options = ("--batch-polls", "1", "--expire-batches", "1",
               "--expired-answered", str(EXPIRED_ANSWERED))  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="bench-batch-") as data_dir,
        fake_server.running(0.0, *options) as url,
    ):
        os.environ.update(_provider_environment(url))
        django_on_fresh_sqlite(data_dir)
        measured = _score(_batch_job(_pilot()))
    print(
        f"{measured['calls']:,} judge calls in {measured['batches']} batches, "
        f"{measured['wall']:.0f} s; poller killed after {measured['killed_at']:,} recorded"
    )
    return [
        _row("batch job: judge calls lost (10,008 calls, SIGKILL, one expired batch)",
             measured["lost"], 0, "calls"),
        _row("batch job: judge calls paid twice (provider's answered requests)",
             measured["paid_twice"], 0, "calls"),
        _row("batch job: judge calls accounted twice", measured["accounted_twice"], 0, "calls"),
        _row("batch job: wall time, 10,008 calls", measured["wall"], None, "s"),
    ]  # fmt: skip


def _row(name: str, measured: float, target: float | None, unit: str) -> dict:
    ok = measured <= target if target is not None else True
    return {"name": name, "measured": measured, "target": target, "unit": unit, "ok": ok}


def _provider_environment(url: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-bench-not-a-key",
        "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-key",
        "CONVERSATION_LEASE_SECONDS": str(LEASE_SECONDS), "LLM_MAX_RETRIES": "0",
    }  # fmt: skip


# --- the job ----------------------------------------------------------------------------------


def _pilot():
    """The pilot run, played offline."""
    from tests.support.builders import enriched_set, launched_run, played

    return played(launched_run(enriched_set(size=PILOT_CASES), name="Pilot"))


def _batch_job(pilot) -> int:
    """A batch scoring job over copies of the pilot's conversations."""
    from benchmark.models import Conversation, ConversationStatus, Run
    from jury.services import juries, scoring

    for_scoring = Run.objects.get(pk=pilot.pk)
    for_scoring.pk, for_scoring.name = None, "Batch bench"
    for_scoring.save()
    source = list(pilot.conversations.filter(status=ConversationStatus.FINISHED))
    agent = pilot.agents.first()
    copies = []
    for repetition in range(COPIES):
        for conversation in source:
            copy = Conversation.objects.get(pk=conversation.pk)
            copy.pk, copy.public_id = None, None
            copy.run, copy.run_agent, copy.repetition = for_scoring, agent, repetition
            copies.append(copy)
    _copies_save(copies[:CONVERSATIONS])
    jury = juries.jury_create(name="Batch bench jury", judges=list(JUDGES))
    job = scoring.scoring_launch(run=for_scoring, jury=jury, use_cache=False, batch=True)
    return job.pk


def _copies_save(copies) -> None:
    import uuid

    from benchmark.models import Conversation

    for copy in copies:
        copy.public_id = uuid.uuid4()
    Conversation.objects.bulk_create(copies, batch_size=500)


def _score(job_id: int) -> dict:
    from django.db.models import Count, Sum

    from benchmark.models import ModelCall
    from jobs.models import JobStatus, ProviderBatch
    from jury.models import ScoreStatus, ScoringJob

    job = ScoringJob.objects.get(pk=job_id)
    total = job.scores.count()
    started = time.perf_counter()
    poller = _poller(job_id)
    killed_at = 0
    while time.perf_counter() - started < DEADLINE_SECONDS:
        done = job.scores.exclude(status=ScoreStatus.PENDING).count()
        if not killed_at and done >= KILL_AT * total:
            os.killpg(poller.pid, signal.SIGKILL)
            poller.wait()
            killed_at = done
            poller = _poller(job_id)
        job.refresh_from_db(fields=["status"])
        if job.status != JobStatus.RUNNING:
            break
        time.sleep(POLL_SECONDS)
    wall = time.perf_counter() - started
    os.killpg(poller.pid, signal.SIGTERM)
    poller.wait()
    batches = ProviderBatch.objects.filter(job_kind="scoring", job_id=job_id)
    answered = sum(batch.counts.get("succeeded", 0) for batch in batches)
    calls = job.scores.aggregate(calls=Sum("calls"))["calls"] or 0
    keys = ModelCall.objects.values("answer_key").annotate(n=Count("id")).filter(n__gt=1)
    return {
        "calls": total, "batches": batches.count(), "wall": wall, "killed_at": killed_at,
        "lost": job.scores.exclude(status=ScoreStatus.VALID).count(),
        "paid_twice": max(answered - total, 0),
        "accounted_twice": max(calls - total, 0) + keys.count(),
    }  # fmt: skip


def _poller(job_id: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, POLLER_FLAG, str(job_id)],
        cwd=REPO_ROOT, env=os.environ.copy(), start_new_session=True,
    )  # fmt: skip


def poll_forever(job_id: int) -> int:
    """The poller process: what the job's watch does, in a loop, until the job ends."""
    import django

    django.setup()
    from jobs.models import JobStatus
    from jury.models import ScoringJob
    from jury.services import scoring_batches

    job = ScoringJob.objects.get(pk=job_id)
    while job.status == JobStatus.RUNNING:
        scoring_batches.scoring_batch_poll(job)
        job.refresh_from_db(fields=["status"])
        time.sleep(POLL_SECONDS)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [POLLER_FLAG]:
        sys.exit(poll_forever(int(sys.argv[2])))
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
