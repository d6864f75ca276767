"""Do the annotator's review page and the study report grow with the study? (issue 34)

Stores, in a throwaway SQLite database inside a temporary DATA_DIR, a target study of
SMALL conversations (two agents, a short trace each, a two-judge jury on every judged rubric,
two clinicians and two operators who submitted every item, each submission with its history
entry), keeps a copy of that database, then grows the same study to LARGE conversations
(the same run, job and study; the stored rows grow tenfold) and times:

- the review page of an item an annotator holds (a long visit: 15 turns, 40 tool calls),
  through the Django test client, on the copy and on the grown study in alternating rounds
  (each after a warm-up request), so a slow spell of a shared machine falls on both: median
  of REPEATS rounds;
- the study's agreement report page computed from scratch (the cache emptied before each
  request, 1,000 resamples), at SMALL before the study grows and at LARGE: best of
  REPORT_REPEATS.

Targets: the review page at LARGE within 1.3x of its time at SMALL; the uncached report at
LARGE under 1.5 s. Times are the CPU time of this process (the test client, the view and
SQLite all run in it; process_time counts numpy's threads too), so other work on a shared
machine does not swell them as it swells wall time; on a quiet machine the two are close.
The process starts as a web process does (config.warm.warm_up: the URL modules loaded, the
start-up's objects frozen out of the collector's full passes); the stored study's objects
come after and stay in them.

Run: .venv/bin/python bench/bench_study_growth.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

SMALL, LARGE = 300, 3_000
EVENTS = 12
AGENTS = ("offline/careful", "offline/careless")
JUDGES = ("offline/standard", "offline/strict")
LONG_TURNS, LONG_TOOL_CALLS = 15, 40
REPEATS = 9
REPORT_REPEATS = 3
GROWTH_TARGET = 1.3  # review page at LARGE / at SMALL, at most
REPORT_TARGET_SECONDS = 1.5
BATCH = 2_000


class World:
    """The run, job, study and people every added conversation joins."""

    def __init__(self):
        from accounts.models import Role, Track, User
        from annotation.models import Project, Study
        from benchmark.models import BenchmarkSet, Run, RunAgent
        from benchmark.services import agents, cases
        from jury.models import ScoringJob
        from jury.services import juries, rubrics

        distribution = cases.distribution_default_ensure()
        self.distribution = distribution
        self.benchmark_set = BenchmarkSet.objects.create(
            name="Growth", distribution=distribution, sampler_seed=0, size=LARGE,
            generator_model="offline/standard", status="finished",
        )  # fmt: skip
        config = agents.agent_configs_ensure_shipped()[0]
        self.run = Run.objects.create(
            name="Growth run", benchmark_set=self.benchmark_set, patient_model="offline/patient",
            patient_prompt_version="bench", roster_model="offline/patient", config_hash="bench",
            status="finished", config={"benchmark_set": self.benchmark_set.pk},
        )  # fmt: skip
        self.run_agents = [
            RunAgent.objects.create(run=self.run, model=m, agent_config=config, label=m)
            for m in AGENTS
        ]
        self.job = ScoringJob.objects.create(
            run=self.run, jury=juries.jury_demo_ensure(), status="finished"
        )
        versions = rubrics.current_versions()
        self.judged = [v for v in versions if v.kind == "dimension"]
        self.job.rubric_versions.set(self.judged)
        self.study = Study.objects.create(
            project=Project.objects.create(name="Growth"), name="Growth study", kind="target",
            sample_size=LARGE,
        )  # fmt: skip
        self.study.scoring_jobs.set([self.job])
        self.study.rubric_versions.set(versions)
        self.people = [
            User.objects.create_user(f"{t}-{n}", role=Role.ANNOTATOR, track=t, licensed=True)
            for t in (Track.CLINICAL, Track.OPERATIONAL)
            for n in range(2)
        ]
        self.panels = {
            t: [v.rubric_id for v in versions if v.kind == "realism" or v.track == t]
            for t in (Track.CLINICAL, Track.OPERATIONAL)
        }
        self.stored = 0

    def grow_to(self, size: int) -> list:
        """Add conversations (with their case, trace, scores and annotations) up to size."""
        from benchmark.engine.sampler import sample_seeds
        from benchmark.models import BenchmarkEntry, Conversation
        from benchmark.services import cases

        seeds = sample_seeds(cases.distribution_spec(self.distribution), size, 0)[self.stored :]
        entries = BenchmarkEntry.objects.bulk_create(
            (
                BenchmarkEntry.from_seed(
                    self.benchmark_set,
                    seed,
                    status="ready",
                    complexity="chronic",
                    profile={"first_name": "Maria", "age": 65},
                    generator_model="offline/standard",
                    story="Needs a refill before a trip. " * 8,
                )  # fmt: skip
                for seed in seeds
            ),
            batch_size=BATCH,
        )
        conversations = Conversation.objects.bulk_create(
            (
                Conversation(
                    run=self.run,
                    run_agent=self.run_agents[n % 2],
                    entry=entry,
                    seed=self.stored + n,
                    status="finished",
                    termination_reason="patient_ended",
                )  # fmt: skip
                for n, entry in enumerate(entries)
            ),
            batch_size=BATCH,
        )
        self._traces(conversations)
        self._scores(conversations)
        items = self._annotations(conversations)
        self.stored = size
        return items

    def _traces(self, conversations) -> None:
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
                    content="Let me look at what is open next week. " * 3,
                    tool_name="get_available_appointments" if n % 4 >= 2 else "",
                    arguments={"start_date": "2026-12-01"} if n % 4 == 2 else None,
                )  # fmt: skip
                for c in conversations
                for n in range(EVENTS)
            ),
            batch_size=BATCH,
        )

    def _scores(self, conversations) -> None:
        from jury.models import JudgeScore, RubricResult

        JudgeScore.objects.bulk_create(
            (
                JudgeScore(
                    job=self.job,
                    conversation=c,
                    rubric_version=v,
                    judge_index=j,
                    judge_model=model,
                    status="valid",
                    score=1 + (c.pk + j) % 5,
                    explanation="The assistant booked without confirming the time.",
                )  # fmt: skip
                for c in conversations
                for v in self.judged
                for j, model in enumerate(JUDGES)
            ),
            batch_size=BATCH,
        )
        RubricResult.objects.bulk_create(
            (
                RubricResult(
                    job=self.job,
                    conversation=c,
                    rubric_id=v.rubric_id,
                    mean=1 + (c.pk % 4) + 0.5 * (c.pk % 2),
                    sd=0.5,
                    passed=True,
                    pass_agreement=True,
                )  # fmt: skip
                for c in conversations
                for v in self.judged
            ),
            batch_size=BATCH,
        )

    def _annotations(self, conversations) -> list:
        from annotation.models import Assignment, AssignmentHistory, StudyItem

        items = StudyItem.objects.bulk_create(
            (
                StudyItem(study=self.study, conversation=c, position=self.stored + n)
                for n, c in enumerate(conversations)
            ),
            batch_size=BATCH,
        )
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
                    scores={r: 1 + (item.pk + n + len(r)) % 5 for r in self.panels[person.track]},
                )  # fmt: skip
                for item in items
                for n, person in enumerate(self.people)
            ),
            batch_size=BATCH,
        )
        AssignmentHistory.objects.bulk_create(
            (
                AssignmentHistory(
                    assignment=a,
                    kind="submit",
                    actor_id=a.annotator_id,
                    new={"scores": a.scores},
                )  # fmt: skip
                for a in assignments
            ),
            batch_size=BATCH,
        )
        return items


def _long_trace(conversation) -> None:
    """The reviewed conversation: 15 turns holding 40 tool calls and their results."""
    from benchmark.models import TraceEvent

    conversation.events.all().delete()
    events, per_turn, calls = [], -(-LONG_TOOL_CALLS // LONG_TURNS), 0
    for turn in range(LONG_TURNS):
        events.append(("patient_message", turn, "", "Could you check what is open next week?"))
        for _ in range(min(per_turn, LONG_TOOL_CALLS - calls)):
            events += [("tool_call", turn, "list_appointments", "")]
            events += [("tool_result", turn, "list_appointments", '{"ok": 1}')]
            calls += 1
        events.append(("assistant_message", turn, "", "Here is what I found for you. " * 6))
    TraceEvent.objects.bulk_create(
        TraceEvent(
            conversation=conversation,
            event_id=f"e{n + 1:04d}",
            seq=n,
            turn=turn,
            kind=kind,
            tool_name=tool,
            content=content,
            ok=True if kind == "tool_result" else None,
            arguments={"start_date": "2026-12-01"} if kind == "tool_call" else None,
        )  # fmt: skip
        for n, (kind, turn, tool, content) in enumerate(events)
    )


class Pages:
    """A reader holding one item of the study, and a researcher reading its report."""

    def __init__(self, world: World, item):
        from django.test import Client
        from django.urls import reverse
        from django.utils import timezone

        from accounts.models import Role, Track, User
        from annotation.models import Assignment, ProjectMember

        reader = User.objects.create_user(
            "reader", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
        )
        ProjectMember.objects.create(
            project=world.study.project, annotator=reader, enrolled_at=timezone.now()
        )
        assignment = Assignment.objects.create(
            item=item, annotator=reader, track=Track.CLINICAL, slot=2, queue_key="reader"
        )
        self.reader = Client()
        self.reader.force_login(reader)
        self.review_url = reverse("annotation:review", args=[assignment.public_id])
        researcher = User.objects.create_user("researcher", role=Role.RESEARCHER)
        self.researcher = Client()
        self.researcher.force_login(researcher)
        self.report_url = reverse("alignment:report", args=[world.study.pk])

    def review_pair(self, small: Snapshot) -> tuple[float, float]:
        """Median review-page CPU on the small study (its snapshot) and on the grown one,
        measured in alternating rounds: the machine's slow and fast spells fall on both."""
        times = {"small": [], "large": []}
        for _ in range(REPEATS):
            with _On(small.path):
                self._review()  # warm-up: a fresh connection, templates, parsed rubrics
                times["small"].append(self._review())
            self._review()
            times["large"].append(self._review())
        return statistics.median(times["small"]), statistics.median(times["large"])

    def _review(self) -> float:
        started = time.process_time()
        if self.reader.get(self.review_url).status_code != 200:
            raise RuntimeError(f"GET {self.review_url} failed")
        return time.process_time() - started

    def report_seconds(self) -> float:
        from django.core.cache import cache

        times = []
        for _ in range(REPORT_REPEATS):
            cache.clear()
            started = time.process_time()
            if self.researcher.get(self.report_url).status_code != 200:
                raise RuntimeError(f"GET {self.report_url} failed")
            times.append(time.process_time() - started)
        return min(times)


def measure() -> dict[str, float]:
    world = World()
    started = time.process_time()
    items = world.grow_to(SMALL)
    _long_trace(items[0].conversation)
    pages = Pages(world, items[0])
    print(f"(stored {SMALL} conversations in {time.process_time() - started:.1f} s)")
    figures = {"report_small": pages.report_seconds()}
    small = Snapshot.of_current_database()
    started = time.process_time()
    world.grow_to(LARGE)
    print(f"(grew to {LARGE:,} conversations in {time.process_time() - started:.1f} s)")
    figures |= dict(zip(("review_small", "review_large"), pages.review_pair(small), strict=True))
    figures["report_large"] = pages.report_seconds()
    return figures


class Snapshot:
    """A copy of the SQLite database as it stood (SQLite's backup: consistent, WAL included),
    to read the small study again beside the grown one."""

    def __init__(self, path: str):
        self.path = path

    @classmethod
    def of_current_database(cls) -> Snapshot:
        import sqlite3
        from contextlib import closing

        from django.db import connection

        copy = str(Path(connection.settings_dict["NAME"]).with_name("small.sqlite3"))
        connection.ensure_connection()
        with closing(sqlite3.connect(copy)) as target:
            connection.connection.backup(target)
        return cls(copy)


class _On:
    """Django's default connection switched to another SQLite file while inside."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        from django.db import connection

        connection.close()
        self.before = connection.settings_dict["NAME"]
        connection.settings_dict["NAME"] = self.path

    def __exit__(self, *exc):
        from django.db import connection

        connection.close()
        connection.settings_dict["NAME"] = self.before


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as data_dir:
        django_on_fresh_sqlite(data_dir)
        from django.db import connections

        from config.warm import warm_up

        warm_up()  # what a web process does as it starts (config/wsgi.py), before any request

        figures = measure()
        connections.close_all()
    for key, seconds in figures.items():
        print(f"{key}: {seconds * 1000:.1f} ms")
    growth = figures["review_large"] / figures["review_small"]
    report = figures["report_large"]
    return [
        {
            "name": f"review page at {LARGE:,} / at {SMALL} conversations "
            f"({figures['review_large'] * 1000:.0f} / {figures['review_small'] * 1000:.0f} ms)",
            "measured": round(growth, 2),
            "target": GROWTH_TARGET,
            "unit": "x",
            "goal": "<=",
            "ok": growth <= GROWTH_TARGET,
        },  # fmt: skip
        {
            "name": f"agreement report page, uncached, {LARGE:,} conversations "
            f"({figures['report_small']:.2f} s at {SMALL})",
            "measured": round(report, 2),
            "target": REPORT_TARGET_SECONDS,
            "unit": "s",
            "goal": "<",
            "ok": report < REPORT_TARGET_SECONDS,
        },  # fmt: skip
    ]


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
