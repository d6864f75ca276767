"""A 20-pair near-miss sensitivity study played by a real worker against a 200 ms fake server.

The study scores 5 reference conversations against 4 perturbation types with the instance-
rubric setup: the judge and the editor are `openai/gpt-4o-mini`, called through the real
OpenAI SDK at OPENAI_BASE_URL, a local fake server that answers every call after 200 ms with
what the offline scripts answer to the same request (recorded by playing the same study with
the offline models first). The study runs at concurrency 8 in a Celery worker on the embedded
folder queue, exactly as launched from the web; the wall time runs from sending the study to
its end. Target: under 60 s.

Why it matters: the catalog's limits for openai/gpt-4o-mini (OpenAI's 200,000 tokens a minute)
used to hold calls that OPENAI_BASE_URL sent to another server; each pair of the instance
setup judges every criterion of two transcripts (about 50,000 tokens), so the first pairs
spent a minute's budget within a second and every call then waited for the minute to roll
over - about 60 s a pair. The limits now hold calls to the vendor's own API only.

The database is a throwaway SQLite file in a temporary DATA_DIR (DATABASE_URL and REDIS_URL
are ignored). Run directly (`python bench/bench_lab_sensitivity.py`) or from bench/run_all.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest  # noqa: E402

TIMEOUT_SECONDS = 600
PROVIDER_SECONDS = 0.2
TARGET_SECONDS = 60.0
REFERENCES = 5
KINDS = ["claim_without_tool_call", "add_prescriptive_directive", "swap_dose",
         "remove_red_flag_warning"]  # fmt: skip
MODEL = "openai/gpt-4o-mini"
CONCURRENCY = 8
WORKER_THREADS = 16


class ReplayServer(FakeLLMServer):
    """Answers each request with the text recorded for the same system prompt and messages."""

    def __init__(self):
        # It measures the site: the per-request SDK type checks stay with the tests.
        super().__init__(record=False, responder=self.reply, check_requests=False)
        self.answers: dict[str, str] = {}
        self.unknown = 0

    @staticmethod
    def key(system: str, messages: list[str]) -> str:
        return hashlib.sha256(json.dumps([system, messages]).encode()).hexdigest()

    def reply(self, request: RecordedRequest) -> FakeReply:
        sent = request.body["messages"]
        system = sent[0]["content"] if sent and sent[0]["role"] == "system" else ""
        text = self.answers.get(self.key(system, [m["content"] for m in sent[1:]]))
        if text is None:
            self.unknown += 1
        return FakeReply(
            text=text or "no answer recorded", delay_seconds=PROVIDER_SECONDS,
            input_tokens=len(json.dumps(sent)) // 4, output_tokens=len(text or "") // 4,
        )  # fmt: skip


def recorded_offline(server: ReplayServer):
    """Record what the offline provider answers, keyed as the server will look it up."""
    from llm.engine.providers import offline

    answer = offline.OfflineProvider.chat

    def chat(provider, request):
        response = answer(provider, request)
        key = server.key(request.system, [message.content for message in request.messages])
        server.answers[key] = response.text
        return response

    offline.OfflineProvider.chat = chat


def build_study_data():
    """A played run of REFERENCES conversations, their instance rubrics, and the study played
    once with the offline models (which records the answers)."""
    from rubric_lab.models import JudgeSetup
    from rubric_lab.services import pipeline, sensitivity
    from tests.support.builders import enriched_set, launched_run, played

    run = played(launched_run(enriched_set(name="bench", size=REFERENCES, sampler_seed=3)))
    conversations = list(run.conversations.scorable())
    job = pipeline.generation_job_launch(
        conversations=conversations, generator_model="offline/standard", run=run
    )
    for generation_id in job.generations.values_list("pk", flat=True):
        pipeline.generation_execute(generation_id)

    def study(judge: str, perturber: str):
        return sensitivity.study_launch(
            run=run, setup=JudgeSetup.INSTANCE, generation_job=job, judge_model=judge,
            perturber_model=perturber, perturbations=KINDS, use_cache=False,
            concurrency=CONCURRENCY, max_cases=REFERENCES,
        )  # fmt: skip

    offline_study = study("offline/standard", "offline/surgical")
    for pair_id in offline_study.pairs.values_list("pk", flat=True):
        sensitivity.near_miss_execute(pair_id)
    return lambda: study(MODEL, MODEL)


def worker_started(environment: dict, data_dir: str):
    from jobs.models import WorkerHeartbeat
    from jobs.services.workers import worker_start

    worker = worker_start(
        concurrency=WORKER_THREADS, log_file=Path(data_dir) / "worker.log", environment=environment
    )
    deadline = time.monotonic() + 60
    while not WorkerHeartbeat.objects.filter(stopped_at=None, mode="embedded").exists():
        if time.monotonic() > deadline or worker.poll() is not None:
            raise SystemExit("the worker did not start; see worker.log in the bench DATA_DIR")
        time.sleep(0.2)
    return worker


def run() -> list[dict]:
    data_dir = tempfile.mkdtemp(prefix="bench-lab-")
    server = ReplayServer().start()
    os.environ.update(
        OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-bench-not-a-key",
        LLM_MAX_RETRIES="0",
    )  # fmt: skip
    from bench.django_setup import django_on_fresh_sqlite

    django_on_fresh_sqlite(data_dir)
    from django.db import connection
    from django.db.models import Count

    from jobs.services.starts import job_start
    from jobs.services.workers import worker_stop
    from rubric_lab.models import NearMissStatus
    from rubric_lab.services import budgets

    recorded_offline(server)
    new_study = build_study_data()
    connection.close()
    worker = worker_started({**os.environ, "DATA_DIR": data_dir}, data_dir)
    try:
        study = new_study()
        started = time.perf_counter()
        job_start(study)
        while study.status == "running" and time.perf_counter() - started < TIMEOUT_SECONDS - 60:
            time.sleep(0.2)
            study.refresh_from_db()
        wall = time.perf_counter() - started
    finally:
        worker_stop(worker)
        server.stop()
    counts = dict(study.pairs.values_list("status").annotate(n=Count("id")))
    calls = sum(row["calls"] for row in budgets.job_model_costs(study))
    tokens = sum(r["input_tokens"] + r["output_tokens"] for r in budgets.job_model_costs(study))
    print(
        f"  {study.pairs.count()} pairs {counts}, {calls} model calls, {tokens:,} tokens, "
        f"{server.unknown} unrecorded requests; study {study.status} in {wall:.1f} s"
    )
    done = study.status == "finished" and not counts.get(NearMissStatus.FAILED)
    return [
        {"name": f"sensitivity study, {study.pairs.count()} pairs, worker at concurrency "
                 f"{CONCURRENCY}, fake {MODEL} at 200 ms",
         "measured": wall, "target": TARGET_SECONDS, "unit": "s",
         "ok": done and wall < TARGET_SECONDS, "goal": "<"},
    ]  # fmt: skip


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
