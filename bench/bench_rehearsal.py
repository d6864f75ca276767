"""Paper-scale rehearsal: the paper's whole run through Redis, PostgreSQL and several workers.

10 agents (5 stand-in models x 2 agent configurations) x 1,200 cases = 12,000 conversations,
then a jury of 2 judges x 6 rubrics = 144,000 judge calls, exactly as production would run them:
the benchmark set is enriched, the run played and the job scored by WORKERS real Celery worker
processes (THREADS threads each, fewer if PostgreSQL's max_connections cannot serve them all:
every worker thread holds a connection) taking their tasks from a private redis-server and
writing to a fresh PostgreSQL database. Every model call goes through the real SDKs
(OpenAI-compatible for the agents and the patient, OpenAI-compatible and Anthropic for the two
judges) to the fake server (its own process), which answers after 200 ms with the stand-in
models of bench/fake_models.py; only the rosters come from the offline script. Nothing is
cached. Everything - PostgreSQL, Redis, the fake server, the workers - shares the machine's
cores.

Reported, per phase (enrichment, run, scoring): wall time, throughput in total and per worker
process, throughput in each tenth of the job (is it flat from the first tenth to the last?),
and the CPU the platform's processes spent per unit (workers, Redis, and PostgreSQL when the
bench started it; not the fake server nor the bench itself); then the statements PostgreSQL
ran per judge call, the database size, each worker's peak resident memory, the total wall
time against the 45-minute target (full size only), and on the result the server time of the
jury report page and of an annotator's review page in a target study drawn from the job.

Needs redis-server and PostgreSQL: by default the bench starts a cluster of its own in a
temporary folder (the server binaries must be installed; bench/load/processes.py); with
BENCH_DATABASE_URL it creates a database on that server instead and drops it at the end (the
database's CPU is then not counted). REHEARSAL_SCALE=0.1 plays a tenth of the cases;
REHEARSAL_WORKERS and REHEARSAL_THREADS set the worker processes and their threads.

Run: .venv/bin/python bench/bench_rehearsal.py   (full size: under 45 minutes on 2 quiet cores)
"""

from __future__ import annotations

import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.load import paper_run  # noqa: E402

# Read by bench/run_all.py: the full rehearsal takes far longer than the other benches.
TIMEOUT_SECONDS = 7_200  # 2 hours
SCALE = float(os.environ.get("REHEARSAL_SCALE") or 1)
CASES = max(2, round(1_200 * SCALE))
WORKERS = int(os.environ.get("REHEARSAL_WORKERS") or 3)
THREADS = int(os.environ.get("REHEARSAL_THREADS") or 24)
FULL_SIZE_TARGET_MINUTES = 45
STUDY_ITEMS = 300
REPEATS = 5
# Server time of the pages on the result (median, seconds).
PAGE_TARGETS = {"report": 2.0, "review": 0.100}


# --- pages on the result ------------------------------------------------------------------------


def _median_server_time(client, url: str) -> tuple[float, float]:
    """(first request, median of REPEATS after it)."""
    times = []
    for _ in range(REPEATS + 1):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} answered {response.status_code}")
    return times[0], statistics.median(times[1:])


def page_times(job) -> dict[str, tuple[float, float]]:
    from django.test import Client
    from django.urls import reverse

    from accounts.models import Role, Track, User
    from annotation.services import enrolment, queue, studies
    from jury.services import rubrics

    researcher = User.objects.create_user("rehearsal-researcher", role=Role.RESEARCHER)
    study = studies.study_create(
        spec=studies.StudySpec(
            project_name="Rehearsal", name="Rehearsal study", kind="target",
            sample_size=min(STUDY_ITEMS, job.run.conversations.count()), seed=5,
        ),
        scoring_jobs=[job], rubric_versions=rubrics.current_versions(),
    )  # fmt: skip
    annotator = User.objects.create_user(
        "rehearsal-clinician", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
    )
    enrolment.member_enrol(project=study.project, annotator=annotator, actor=researcher)
    assignment = queue.next_assignment(study=study, annotator=annotator)
    client = Client()
    client.force_login(researcher)
    report = _median_server_time(client, reverse("jury:report", args=[job.pk]))
    client.force_login(annotator)
    review = _median_server_time(client, reverse("annotation:review", args=[assignment.public_id]))
    return {"report": report, "review": review}


# --- the bench ----------------------------------------------------------------------------------


def rehearse() -> dict:
    started = time.perf_counter()
    figures: dict = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-rehearsal-") as data_dir,
        paper_run.services(Path(data_dir)) as found,
    ):
        threads = paper_run.threads_that_fit(WORKERS, THREADS)
        workers = paper_run.Workers(found, data_dir, count=WORKERS, threads=threads)
        measured = {"workers": workers.pids, **found.server_pids}
        try:
            benchmark_set, enrichment = paper_run.enrich(CASES, measured)
            run, playing = paper_run.play(benchmark_set, WORKERS * threads, measured)
            job, scoring = paper_run.score(run, WORKERS * threads, measured)
            figures["peak_mb"] = workers.peak_memory_mb()
        finally:
            workers.stop()
        figures.update(
            threads=threads, phases=[enrichment, playing, scoring],
            database_measured=found.database_measured,
            model_calls=paper_run.model_calls(run),
            finished=run.conversations.filter(status="finished").count(),
            valid_scores=job.scores.filter(status="valid").count(),
            turns=statistics.mean(
                run.conversations.filter(status="finished").values_list(
                    "assistant_turns", flat=True
                )
            ),
            database_mb=paper_run.database_mb(),
            work_seconds=time.perf_counter() - started,
        )  # fmt: skip
        figures["pages"] = page_times(job)
    return figures


def print_phases(figures: dict) -> None:
    per_unit = {"enrich cases": "case", "conversations": "model call", "judge calls": "call"}
    print(f"\n{WORKERS} workers x {figures['threads']} threads, {CASES:,} cases:")
    for phase in figures["phases"]:
        units = figures["model_calls"] if phase.name == "conversations" else phase.units
        cpu = phase.cpu_seconds * 1000 / max(units, 1)
        where = "" if figures["database_measured"] else " (PostgreSQL not counted)"
        print(
            f"  {phase.name:<14} {phase.units:>8,} in {phase.seconds:7.0f} s: "
            f"{phase.rate:6.1f}/s ({phase.rate / WORKERS:5.1f} per worker process); "
            f"CPU {cpu:5.1f} ms per {per_unit[phase.name]}{where} ({phase.cpu_text(units)})"
        )
        print("    per tenth of the job: " + " ".join(f"{rate:.1f}" for rate in phase.tenths()))
    scoring = figures["phases"][2]
    if scoring.statements is not None:
        print(
            f"  PostgreSQL statements per judge call: {scoring.statement_count / scoring.units:.1f}"
        )
    print(
        f"  {figures['model_calls']:,} agent and patient calls, {figures['turns']:.1f} "
        f"assistant turns on average; database {figures['database_mb']:.0f} MB; peak worker "
        f"memory {', '.join(f'{mb:.0f}' for mb in figures['peak_mb'])} MB; "
        f"{figures['work_seconds'] / 60:.1f} minutes from the start to the scored job"
    )
    report_first, _ = figures["pages"]["report"]
    review_first, _ = figures["pages"]["review"]
    print(f"  first request: report {report_first:.2f} s, review {review_first:.3f} s")


def rows(figures: dict) -> list[dict]:
    print_phases(figures)
    enrichment, playing, scoring = figures["phases"]
    conversations, judge_calls = playing.units, scoring.units
    scale = f"{conversations:,} conversations"
    result = [
        _row(f"rehearsal: conversations finished of {conversations:,}",
             figures["finished"], conversations, "", ">="),
        _row(f"rehearsal: valid judge scores of {judge_calls:,}",
             figures["valid_scores"], judge_calls, "", ">="),
        _row("rehearsal: conversations per second, all workers", playing.rate, None, "/s"),
        _row(f"rehearsal: conversations per second per worker process ({figures['threads']} "
             "threads)", playing.rate / WORKERS, None, "/s"),
        _row("rehearsal: judge calls per second, all workers", scoring.rate, None, "/s"),
        _row("rehearsal: judge calls per second per worker process", scoring.rate / WORKERS,
             None, "/s"),
        _row("rehearsal: judge calls per second, last tenth / first tenth of the job",
             scoring.tenths()[-1] / scoring.tenths()[0], None, "x"),
        _row(f"rehearsal: PostgreSQL database size, {scale}", figures["database_mb"], None, "MB"),
        _row("rehearsal: peak worker memory (largest process)", max(figures["peak_mb"]),
             None, "MB"),
        _row(f"rehearsal: jury report page on the result, {scale}", figures["pages"]["report"][1],
             PAGE_TARGETS["report"], "s", "<"),
        _row("rehearsal: review page in a study drawn from the result",
             figures["pages"]["review"][1], PAGE_TARGETS["review"], "s", "<"),
    ]  # fmt: skip
    minutes = figures["work_seconds"] / 60
    if SCALE == 1:
        result.append(_row("rehearsal: the paper's whole run (enrich, play, score), minutes",
                           minutes, FULL_SIZE_TARGET_MINUTES, "min", "<"))  # fmt: skip
    else:
        result.append(_row(f"rehearsal at scale {SCALE:g}: enrich, play and score, minutes",
                           minutes, None, "min"))  # fmt: skip
    return result


def _row(name, measured, target, unit, goal="") -> dict:
    if target is None:
        ok = True  # a figure to report, with no target in the issues
    elif goal == ">=":
        ok = measured >= target
    else:
        ok = measured < target
    return {"name": name, "measured": round(measured, 4), "target": target, "unit": unit,
            "ok": ok, "goal": goal}  # fmt: skip


def run() -> list[dict]:
    # A stopped bench still stops its workers and servers and drops its database (the finally
    # blocks run on SystemExit; the workers live in their own sessions and would outlive it).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return rows(rehearse())


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
