"""CPU per model call of conversations and of judge calls, over every process of the platform,
and per judge call side by side with inspect-ai against the same fake server.

The paper's run at a small size through real services (bench/load/paper_run.py): a private
redis-server, a PostgreSQL cluster of the bench's own (or a throwaway database on
BENCH_DATABASE_URL's server, whose CPU then cannot be counted), the fake model server in a
process of its own answering after 200 ms with the stand-in models, and CPU_WORKERS (3) Celery
worker processes of CPU_THREADS (24) threads. CPU_CASES (24) cases are enriched, played by 10
agents (240 conversations, about 17 agent and patient calls each) and scored by 2 judges x 6
rubrics (2,880 judge calls, prompts of about 13 KB). For the run and for the scoring job the
bench adds up the user and system CPU the workers, Redis and PostgreSQL spent from the start
of the phase to its end (processes that ended meanwhile included; the fake server and the
bench's own process are left out) and divides by the agent and patient calls, or the judge
calls. It also counts the statements PostgreSQL ran per judge call (pg_stat_statements).
Then the same run is scored again through the batch path (an OpenAI and an Anthropic judge,
BATCH_JUDGES, whose batch APIs the fake server speaks; the bench asks a worker to look at the
job every BATCH_LOOK_SECONDS, more often than the job's watch would, so its CPU is if anything
overcounted) and its CPU per judge call is added up the same way.

Then inspect-ai (INSPECT_VERSION, installed with pip into a throwaway venv: `python -m venv`,
`pip install inspect-ai`; INSPECT_VENV names an existing one to reuse) scores the same judge
prompts - the ones the jury sent, rendered again - against the same fake server with as many
connections as the jury had calls in flight: `generate()` and a scorer that reads the JSON
score. Its CPU is its process's during `eval()`. Targets (issue 34): conversation CPU at most
4 ms per model call in the reference machine's terms (REFERENCE_INSPECT_MS; in plain
milliseconds where inspect-ai cannot be run); live judge-call CPU at most 0.6x inspect-ai's,
batch judge-call CPU at most 0.3x (or at most 11 and 5.5 ms where the venv cannot be built).

Run: .venv/bin/python bench/bench_worker_cpu.py   (about 5 minutes, more the first time the
venv is built)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load import paper_run  # noqa: E402

TIMEOUT_SECONDS = 2400
CASES = int(os.environ.get("CPU_CASES") or 24)
WORKERS = int(os.environ.get("CPU_WORKERS") or 3)
THREADS = int(os.environ.get("CPU_THREADS") or 24)
INSPECT_VERSION = "0.3.285"
INSPECT_SAMPLES = 1_440
CONVERSATION_TARGET_MS = 4.0  # issue 34 (issue 21 asked for 8)
# inspect-ai's CPU per judge call on the machine where the 4 ms was last measured against it
# (stop 46's: conversation 5.3 ms, inspect-ai 18.0 ms). The same code takes 18 to 42 ms there
# on the machines this bench has run on since, so a conversation's milliseconds are compared
# with the target in that machine's terms: measured x 18.0 / inspect-ai's milliseconds here.
REFERENCE_INSPECT_MS = 18.0
JUDGE_TARGET_MS = 11.0  # where inspect-ai cannot be installed
RATIO_TARGET = 0.6
BATCH_JUDGE_TARGET_MS = 5.5
BATCH_RATIO_TARGET = 0.3
BATCH_JUDGES = ("openai/rehearsal-judge", "anthropic/rehearsal-judge")
BATCH_LOOK_SECONDS = 1.0
INSPECT_SCRIPT = r"""
import json, sys, time
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import Score, accuracy, scorer
from inspect_ai.solver import generate

prompts, base_url, connections, log_dir = sys.argv[1:5]

@scorer(metrics=[accuracy()])
def judge_json():
    async def score(state, target):
        answer = json.loads(state.output.completion)
        return Score(value=1 if 1 <= answer["score"] <= 5 else 0,
                     explanation=answer["explanation"])
    return score

rows = [json.loads(line) for line in open(prompts, encoding="utf-8")]
dataset = [Sample(id=n, input=[ChatMessageSystem(content=row["system"]),
                               ChatMessageUser(content=row["user"])])
           for n, row in enumerate(rows)]
task = Task(dataset=dataset, solver=generate(), scorer=judge_json())
cpu, wall = time.process_time(), time.perf_counter()
[log] = eval(task, model="openai/rehearsal-judge", model_base_url=base_url,
             max_connections=int(connections), log_dir=log_dir, display="none",
             fail_on_error=False, max_samples=int(connections),
             # Chat completions, as the jury's OpenAI-compatible judge (not the Responses API).
             model_args={"responses_api": False})
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"samples": len(rows), "cpu_seconds": cpu, "wall_seconds": wall,
                  "status": log.status, "completed": log.results.completed_samples}))
"""


def measure_platform(data_dir: str) -> dict:
    with paper_run.services(Path(data_dir)) as found:
        # The batch judges' OpenAI client (the workers take the bench's environment).
        os.environ.update(OPENAI_BASE_URL=f"{found.fake_url}/v1", OPENAI_API_KEY="rehearsal")
        threads = paper_run.threads_that_fit(WORKERS, THREADS)
        workers = paper_run.Workers(found, data_dir, count=WORKERS, threads=threads)
        measured = {"workers": workers.pids, **found.server_pids}
        try:
            benchmark_set, _ = paper_run.enrich(CASES, measured)
            run, playing = paper_run.play(benchmark_set, WORKERS * threads, measured)
            job, scoring = paper_run.score(run, WORKERS * threads, measured)
            batch = score_in_batches(run, measured)
        finally:
            workers.stop()
        prompts = Path(data_dir) / "judge-prompts.jsonl"
        write_judge_prompts(job, prompts)
        return {
            "concurrency": WORKERS * threads,
            "database_measured": found.database_measured,
            "model_calls": paper_run.model_calls(run),
            "playing": playing,
            "scoring": scoring,
            "batch": batch,
            "inspect": measure_inspect(prompts, found.fake_url, WORKERS * threads, data_dir),
        }


def score_in_batches(run, measured: dict):
    """The run scored again through the batch path; its Phase, or None when it failed (said)."""
    from jobs.services import watch
    from jury.models import ScoringJob
    from jury.services import juries, scoring

    try:
        jury = juries.jury_create(name="rehearsal batch jury", judges=list(BATCH_JUDGES))
        job = scoring.scoring_launch(run=run, jury=jury, use_cache=False, batch=True)
    except Exception as error:  # the live figures stand without it
        print(f"(batch path not measured: {error})")
        return None
    scoring.scoring_start(job)
    looked = [time.monotonic()]

    def finished() -> bool:
        if time.monotonic() - looked[0] >= BATCH_LOOK_SECONDS:
            looked[0] = time.monotonic()
            watch.watch_now("scoring", job.pk)
        return ScoringJob.objects.values_list("status", flat=True).get(pk=job.pk) != "running"

    phase = paper_run.follow(
        "batch judge calls", job.scores.count(),
        lambda: job.scores.exclude(status="pending").count(), finished, measured,
    )  # fmt: skip
    job.refresh_from_db()
    if job.status != "finished":
        print(f"(batch scoring ended {job.status}: {job.failure_reason or job.stop_reason})")
        return None
    return phase


def write_judge_prompts(job, path: Path) -> None:
    """The prompts the jury sent (rendered again from the stored rows), for inspect-ai."""
    from jury.services import scoring
    from jury.services.rubrics import rubric_of

    rows = job.scores.select_related("conversation", "rubric_version").order_by("pk")
    with open(path, "w", encoding="utf-8") as out:
        for score in rows[:INSPECT_SAMPLES]:
            request = scoring.judge_request(
                conversation=score.conversation, rubric=rubric_of(score.rubric_version),
                judge_model=score.judge_model, judge_index=score.judge_index,
            )  # fmt: skip
            prompt = {"system": request.system, "user": request.messages[0].content}
            out.write(json.dumps(prompt) + "\n")


def inspect_python(folder: str) -> Path | None:
    """A venv's python with inspect-ai: INSPECT_VENV's, else a new one in `folder`; None when
    it cannot be built (no network, no pip)."""
    existing = os.environ.get("INSPECT_VENV", "").strip()
    home = Path(existing) if existing else Path(folder) / "inspect-venv"
    python = home / "bin" / "python"
    if not python.exists():
        print(f"(building a throwaway venv for inspect-ai {INSPECT_VERSION} in {home})")
        venv.create(home, with_pip=True)
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"inspect-ai=={INSPECT_VERSION}",
             "openai"], capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        if installed.returncode != 0:
            print(f"(inspect-ai could not be installed: {installed.stderr.strip()[-500:]})")
            return None
    return python


def measure_inspect(prompts: Path, fake_url: str, connections: int, folder: str) -> dict | None:
    python = inspect_python(folder)
    if python is None:
        return None
    script = Path(folder) / "inspect_judges.py"
    script.write_text(INSPECT_SCRIPT, encoding="utf-8")
    environment = {**os.environ, "OPENAI_API_KEY": "rehearsal", "INSPECT_LOG_LEVEL": "warning"}
    done = subprocess.run(
        [str(python), str(script), str(prompts), f"{fake_url}/v1", str(connections),
         str(Path(folder) / "inspect-logs")],
        capture_output=True, text=True, timeout=1200, env=environment, cwd=folder,
    )  # fmt: skip
    if done.returncode != 0:
        print(f"(inspect-ai failed: {done.stderr.strip()[-1500:]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def rows(figures: dict) -> list[dict]:
    playing, scoring = figures["playing"], figures["scoring"]
    where = "workers, Redis, PostgreSQL" if figures["database_measured"] else "workers, Redis"
    conversation_ms = playing.cpu_seconds * 1000 / figures["model_calls"]
    judge_ms = scoring.cpu_seconds * 1000 / scoring.units
    print(
        f"\nrun: {playing.units} conversations, {figures['model_calls']} agent and patient "
        f"calls in {playing.seconds:.0f} s; CPU per call: "
        f"{playing.cpu_text(figures['model_calls'])}"
    )
    print(
        f"jury: {scoring.units} judge calls in {scoring.seconds:.0f} s ({scoring.rate:.1f}/s "
        f"with {figures['concurrency']} in flight); CPU per call: "
        f"{scoring.cpu_text(scoring.units)}"
    )
    if playing.statements is not None:
        calls = figures["model_calls"]
        per_call = playing.statement_count / calls
        print(f"PostgreSQL statements per agent or patient call: {per_call:.1f}")
        for count, statement in playing.statements[:12]:
            print(f"  {count / calls:6.2f}  {' '.join(statement.split())[:110]}")
    if scoring.statements is not None:
        print(
            f"PostgreSQL statements per judge call: {scoring.statement_count / scoring.units:.1f}"
        )
        for calls, statement in scoring.statements[:12]:
            print(f"  {calls / scoring.units:6.2f}  {' '.join(statement.split())[:110]}")
    result = [
        {"name": f"conversation CPU per agent or patient call ({where})",
         "measured": round(conversation_ms, 2), "target": CONVERSATION_TARGET_MS, "unit": "ms",
         "ok": conversation_ms <= CONVERSATION_TARGET_MS, "goal": "<="},
    ]  # fmt: skip
    inspect = figures["inspect"]
    if inspect is not None and inspect["completed"]:
        # Held to the target in the reference machine's terms instead (REFERENCE_INSPECT_MS);
        # the milliseconds here stay in the table, for the record.
        result[0].update(target=None, ok=True)
        reference_ms = conversation_ms * REFERENCE_INSPECT_MS / _inspect_ms(inspect)
        result.append(
            {"name": "conversation CPU per call in the reference machine's terms (x "
                     f"{REFERENCE_INSPECT_MS} / inspect-ai's judge call here)",
             "measured": round(reference_ms, 2), "target": CONVERSATION_TARGET_MS, "unit": "ms",
             "ok": reference_ms <= CONVERSATION_TARGET_MS, "goal": "<="}
        )  # fmt: skip
    batch = figures["batch"]
    batch_ms = None if batch is None else batch.cpu_seconds * 1000 / batch.units
    if batch is not None:
        print(
            f"batch jury: {batch.units} judge calls in {batch.seconds:.0f} s; CPU per call: "
            f"{batch.cpu_text(batch.units)}"
        )
    if inspect is None or not inspect["completed"]:
        print("(inspect-ai not measured: the judge call is held to the absolute target)")
        result.append(
            {"name": f"judge call CPU ({where})", "measured": round(judge_ms, 2),
             "target": JUDGE_TARGET_MS, "unit": "ms", "ok": judge_ms <= JUDGE_TARGET_MS,
             "goal": "<="}
        )  # fmt: skip
        if batch_ms is not None:
            result.append(
                {"name": f"batch judge call CPU ({where})", "measured": round(batch_ms, 2),
                 "target": BATCH_JUDGE_TARGET_MS, "unit": "ms",
                 "ok": batch_ms <= BATCH_JUDGE_TARGET_MS, "goal": "<="}
            )  # fmt: skip
        return result
    inspect_ms = _inspect_ms(inspect)
    ratio = judge_ms / inspect_ms
    print(
        f"inspect-ai {INSPECT_VERSION}: {inspect['completed']} of {inspect['samples']} samples "
        f"in {inspect['wall_seconds']:.0f} s ({inspect['samples'] / inspect['wall_seconds']:.1f}"
        f"/s), CPU {inspect_ms:.1f} ms per call; this platform {judge_ms:.1f} ms"
    )
    result += [
        {"name": f"judge call CPU ({where})", "measured": round(judge_ms, 2), "target": None,
         "unit": "ms", "ok": True},
        {"name": f"judge call CPU, inspect-ai {INSPECT_VERSION} (its process)",
         "measured": round(inspect_ms, 2), "target": None, "unit": "ms", "ok": True},
        {"name": "judge call CPU, this platform / inspect-ai", "measured": round(ratio, 3),
         "target": RATIO_TARGET, "unit": "x", "ok": ratio <= RATIO_TARGET, "goal": "<="},
    ]  # fmt: skip
    if batch_ms is not None:
        result.append(
            {"name": "batch judge call CPU, this platform / inspect-ai",
             "measured": round(batch_ms / inspect_ms, 3), "target": BATCH_RATIO_TARGET,
             "unit": "x", "ok": batch_ms / inspect_ms <= BATCH_RATIO_TARGET, "goal": "<="}
        )  # fmt: skip
    return result


def _inspect_ms(inspect: dict) -> float:
    return inspect["cpu_seconds"] * 1000 / inspect["samples"]


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-worker-cpu-") as data_dir:
        return rows(measure_platform(data_dir))


if __name__ == "__main__":
    from run_all import report

    sys.exit(report(run()))
