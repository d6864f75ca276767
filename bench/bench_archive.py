"""Export and import of a paper-scale study archive.

Stores, in a throwaway SQLite database inside a temporary DATA_DIR: 1,200 conversations (two
agents) with 40 trace events each and real sandbox snapshots before and after (built by the
sandbox engine, about 50 KB of JSON each), a two-judge jury's scores on six rubrics with
explanations and merged results, and a target study of all 1,200 with two clinicians and two
operators per item (submitted annotations, each with its history entry). Then it times:

- writing the study archive (alignment.services.archive.study_archive_write) to a file;
- importing it into the same site (a second study beside the original);
- the archive's agreement tables (1,000 resamples) of the imported study.

The export time decides how the button works: above STREAM_BUDGET_SECONDS it cannot be served
inside a web request, so it runs in the workers with a progress bar (see the study archive in
docs/guides/researcher/studies.md).

Run: .venv/bin/python bench/bench_archive.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

CONVERSATIONS = 1_200
EVENTS = 40
DISTINCT_SANDBOXES = 60  # built once and cycled: building 2,400 would dominate the set-up
STREAM_BUDGET_SECONDS = 2.0
TARGETS = {"export": 30.0, "import": 90.0, "tables": 10.0}  # seconds, ceilings
BATCH = 2_000
AGENTS = ("offline/careful", "offline/careless")
JUDGES = ("offline/standard", "offline/strict")


def _world():
    from accounts.models import Role, Track, User
    from annotation.models import Assignment, AssignmentHistory, Project, Study, StudyItem
    from benchmark.engine.sampler import sample_seeds
    from benchmark.engine.sandbox import Sandbox
    from benchmark.engine.sandbox.examples import EXAMPLE_NOW, EXAMPLE_PROFILE, EXAMPLE_ROSTER
    from benchmark.models import BenchmarkEntry, BenchmarkSet, Conversation, Run, RunAgent
    from benchmark.services import agents, cases
    from jury.models import JudgeScore, RubricResult, ScoringJob
    from jury.services import juries, rubrics

    distribution = cases.distribution_default_ensure()
    benchmark_set = BenchmarkSet.objects.create(
        name="Paper", distribution=distribution, sampler_seed=0, size=CONVERSATIONS // 2,
        generator_model="offline/standard", status="finished",
    )  # fmt: skip
    entries = BenchmarkEntry.objects.bulk_create(
        BenchmarkEntry.from_seed(
            benchmark_set,
            seed,
            status="ready",
            complexity="chronic",
            profile=EXAMPLE_PROFILE,
            generator_model="offline/standard",
            story="Needs a refill before a trip. " * 8,
        )  # fmt: skip
        for seed in sample_seeds(cases.distribution_spec(distribution), CONVERSATIONS // 2, 0)
    )
    config = agents.agent_configs_ensure_shipped()[0]
    run = Run.objects.create(
        name="Paper run", benchmark_set=benchmark_set, patient_model="offline/patient",
        patient_prompt_version="bench", roster_model="offline/patient", config_hash="bench",
        status="finished", config={"benchmark_set": benchmark_set.pk},
    )  # fmt: skip
    run_agents = [
        RunAgent.objects.create(run=run, model=m, agent_config=config, label=m) for m in AGENTS
    ]
    sandboxes = [
        Sandbox.build(EXAMPLE_PROFILE, EXAMPLE_ROSTER, seed, EXAMPLE_NOW).to_json()
        for seed in range(DISTINCT_SANDBOXES)
    ]
    conversations = Conversation.objects.bulk_create(
        (
            Conversation(
                run=run,
                run_agent=run_agents[i % 2],
                entry=entries[i // 2],
                seed=i,
                status="finished",
                termination_reason="patient_ended",
                sandbox_initial=sandboxes[i % DISTINCT_SANDBOXES],
                sandbox_final=sandboxes[(i + 1) % DISTINCT_SANDBOXES],
            )  # fmt: skip
            for i in range(CONVERSATIONS)
        ),
        batch_size=200,
    )
    _traces(conversations)
    job = ScoringJob.objects.create(run=run, jury=juries.jury_demo_ensure(), status="finished")
    versions = rubrics.current_versions()
    judged = [v for v in versions if v.kind == "dimension"]
    job.rubric_versions.set(judged)
    JudgeScore.objects.bulk_create(
        (
            JudgeScore(
                job=job,
                conversation=c,
                rubric_version=v,
                judge_index=j,
                judge_model=model,
                status="valid",
                score=1 + (c.pk + j) % 5,
                explanation="The assistant booked without confirming the time. " * 3,
            )  # fmt: skip
            for c in conversations
            for v in judged
            for j, model in enumerate(JUDGES)
        ),
        batch_size=BATCH,
    )
    RubricResult.objects.bulk_create(
        (
            RubricResult(
                job=job,
                conversation=c,
                rubric_id=v.rubric_id,
                mean=1 + (c.pk % 5) + 0.5 * (c.pk % 2 and c.pk % 5 < 4),
                sd=0.5,
                passed=True,
                pass_agreement=True,
            )  # fmt: skip
            for c in conversations
            for v in judged
        ),
        batch_size=BATCH,
    )
    study = Study.objects.create(
        project=Project.objects.create(name="Paper"), name="Paper study", kind="target",
        sample_size=CONVERSATIONS,
    )  # fmt: skip
    study.scoring_jobs.set([job])
    study.rubric_versions.set(versions)
    items = StudyItem.objects.bulk_create(
        StudyItem(study=study, conversation=c, position=n) for n, c in enumerate(conversations)
    )
    people = [
        User.objects.create_user(f"{track}-{n}", role=Role.ANNOTATOR, track=track, licensed=True)
        for track in (Track.CLINICAL, Track.OPERATIONAL)
        for n in range(2)
    ]
    panels = {
        track: [v.rubric_id for v in versions if v.kind == "realism" or v.track == track]
        for track in (Track.CLINICAL, Track.OPERATIONAL)
    }
    assignments = Assignment.objects.bulk_create(
        (
            Assignment(
                item=item,
                annotator=person,
                track=person.track,
                slot=n % 2,
                status="submitted",
                queue_key=f"{item.pk}-{n}",
                version=1,
                seconds_on_task=95,
                scores={r: 1 + (item.pk + n + len(r)) % 5 for r in panels[person.track]},
                feedback={panels[person.track][0]: "Booked before confirming the time."},
            )  # fmt: skip
            for item in items
            for n, person in enumerate(people)
        ),
        batch_size=BATCH,
    )
    AssignmentHistory.objects.bulk_create(
        (
            AssignmentHistory(
                assignment=a,
                kind="submit",
                actor_id=a.annotator_id,
                new={"scores": a.scores, "feedback": a.feedback},
            )  # fmt: skip
            for a in assignments
        ),
        batch_size=BATCH,
    )
    return study


def _traces(conversations) -> None:
    from benchmark.models import TraceEvent

    kinds = ("patient_message", "assistant_message", "tool_call", "tool_result")
    TraceEvent.objects.bulk_create(
        (
            TraceEvent(
                conversation=c,
                event_id=f"e{n + 1:04d}",
                seq=n,
                turn=n // 4,
                kind=kinds[n % 4],
                content="Let me look at what is open next week for you. " * 3,
                tool_name="get_available_appointments" if n % 4 >= 2 else "",
                arguments={"start_date": "2026-12-01"} if n % 4 == 2 else None,
            )  # fmt: skip
            for c in conversations
            for n in range(EVENTS)
        ),
        batch_size=BATCH,
    )


def _timed(action):
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def _row(name: str, measured: float, target: float, unit: str = "s") -> dict:
    return {"name": name, "measured": round(measured, 2), "target": target, "unit": unit,
            "ok": measured <= target, "goal": "<="}  # fmt: skip


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-archive-") as folder:
        django_on_fresh_sqlite(folder)
        from alignment.services.archive import study_archive_import, study_archive_write
        from alignment.services.archive.export import study_tables

        study = _world()
        path = Path(folder) / "paper.zip"
        _, export_seconds = _timed(lambda: study_archive_write(study, path))
        size_mb = path.stat().st_size / 1e6
        imported, import_seconds = _timed(
            lambda: study_archive_import(path, archive_name=path.name)
        )
        tables, tables_seconds = _timed(lambda: study_tables(imported.study))
        assert tables == study_tables(study), "the imported study's tables differ"
    print(f"export {export_seconds:.1f} s ({size_mb:.1f} MB), import {import_seconds:.1f} s, "
          f"tables {tables_seconds:.1f} s; streaming budget {STREAM_BUDGET_SECONDS} s: "
          f"{'worker job' if export_seconds > STREAM_BUDGET_SECONDS else 'streamed'}")  # fmt: skip
    return [
        _row(f"archive export, {CONVERSATIONS} conversations", export_seconds, TARGETS["export"]),
        {
            "name": "archive size",
            "measured": round(size_mb, 1),
            "target": None,
            "unit": "MB",
            "ok": True,
        },  # fmt: skip
        _row("archive import beside the original", import_seconds, TARGETS["import"]),
        _row("archive tables of the imported study", tables_seconds, TARGETS["tables"]),
    ]


if __name__ == "__main__":
    rows = run()
    for row in rows:
        print(f"{row['name']}: {row['measured']} {row['unit']} (target {row['target']})")
    sys.exit(0 if all(row["ok"] for row in rows) else 1)
