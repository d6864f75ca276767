"""Time to write the static report bundle (alignment.services.bundle) of a stored scoring job,
at 500 conversations (the most the button writes within its request, target 30 s) and at the
paper's 12,000 (what the command does; reported, target 10 min).

Reuses bench_reports' synthetic job (stored results, bulk_create, no model calls), with a
short trace of ten events per conversation so the conversations' part of the page has text to
carry. Each size runs in its own process (Django's settings are fixed once set up).
Run: .venv/bin/python bench/bench_report_bundle.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_reports  # noqa: E402
from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

SIZES = {500: 30.0, 12_000: 600.0}  # conversations -> target seconds
EVENTS_PER_CONVERSATION = 10


def _with_traces(job_id: int) -> None:
    from benchmark.models import TraceEvent
    from jury.models import ScoringJob

    job = ScoringJob.objects.get(pk=job_id)
    events = [
        TraceEvent(
            conversation_id=conversation_id,
            event_id=f"e{seq}",
            seq=seq,
            turn=seq // 2,
            kind="assistant_message" if seq % 2 else "patient_message",
            content="I would like to book a follow-up for my blood pressure next week. " * 3,
        )
        for conversation_id in job.run.conversations.values_list("pk", flat=True)
        for seq in range(EVENTS_PER_CONVERSATION)
    ]
    TraceEvent.objects.bulk_create(events, batch_size=5_000)


def _measure(conversations: int) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-bundle-") as data_dir:
        django_on_fresh_sqlite(data_dir)
        from django.db import connections

        from alignment.services.bundle import report_bundle_write
        from jury.models import ScoringJob

        bench_reports.CONVERSATIONS = conversations
        job_id = bench_reports._build()
        _with_traces(job_id)
        job = ScoringJob.objects.select_related("run", "jury").get(pk=job_id)
        started = time.perf_counter()
        report_bundle_write([job], Path(data_dir) / "bundle")
        seconds = time.perf_counter() - started
        connections.close_all()
    return seconds


def run() -> list[dict]:
    results = []
    for conversations, target in SIZES.items():
        answer = subprocess.run(
            [sys.executable, __file__, "--size", str(conversations)],
            capture_output=True,
            text=True,
            check=True,
        )
        measured = float(answer.stdout.strip().splitlines()[-1])
        results.append(
            {
                "name": f"report bundle of {conversations:,} conversations x 2 judges x 6 rubrics",
                "measured": round(measured, 1),
                "target": target,
                "unit": "s",
                "ok": measured < target,
            }
        )
    return results


if __name__ == "__main__" and sys.argv[1:2] == ["--size"]:
    print(_measure(int(sys.argv[2])))
elif __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
