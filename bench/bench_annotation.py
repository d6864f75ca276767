"""Server time of the annotator's review page and of "next item" in a large database.

Stores 12,000 conversations (bulk_create, not played; each with a short trace) of four agents
in a throwaway SQLite database inside a temporary DATA_DIR, and a target study of 500 of them
whose seats are half taken by 30 annotators. One sampled conversation gets the trace of a long
visit: 15 turns with 40 tool calls (and their results). Then it times, through the Django
test client (queries, blinding, template rendering):

- GET of the review page of that conversation (median of REPEATS after a warm-up);
- POST "next item" by annotators who hold no item yet, so each one reserves a new item
  (breadth-first candidate ranking, a seat claimed under the unique constraint).

Run: .venv/bin/python bench/bench_annotation.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.django_setup import django_on_fresh_sqlite  # noqa: E402

CONVERSATIONS = 12_000
AGENT_MODELS = ("offline/careful", "offline/careless", "openai/gpt-5.5", "anthropic/claude-x")
EVENTS_PER_CONVERSATION = 8
STUDY_ITEMS = 500
EARLIER_ANNOTATORS = 30
LONG_TURNS, LONG_TOOL_CALLS = 15, 40
REPEATS = 7
TARGETS = {"review": 0.100, "next": 0.020}  # seconds, median
BATCH = 5_000

PROFILE = {
    "first_name": "Maria", "last_name": "Lopez", "preferred_name": "Maria",
    "date_of_birth": "1961-04-12", "age": 65, "sex": "female", "gender": "woman",
    "pronouns": "she/her", "conditions": ["Type 2 diabetes", "Chronic kidney disease stage 3"],
    "allergies": ["penicillin"],
    "insurance": {"provider": "Blue Cross Blue Shield", "plan_type": "PPO"},
    "preferred_pharmacy": {"name": "CVS Pharmacy", "phone": "5125550100"},
    "medications": [
        {"name": "Metformin", "dosage": "500 mg", "frequency": "twice daily", "status": "active",
         "refills_remaining": 2, "last_filled": "2026-10-01", "pharmacy": "CVS Pharmacy"},
    ] * 4,
}  # fmt: skip
TOOLS = ("list_appointments", "get_available_appointments", "schedule_appointment",
         "list_medications", "request_refill")  # fmt: skip


def _conversations():
    """12,000 stored conversations with short traces; returns them in creation order."""
    from benchmark.engine.sampler import sample_seeds
    from benchmark.models import BenchmarkEntry, BenchmarkSet, Conversation, Run, RunAgent
    from benchmark.services import agents, cases

    cases_count = CONVERSATIONS // len(AGENT_MODELS)
    distribution = cases.distribution_default_ensure()
    benchmark_set = BenchmarkSet.objects.create(
        name="Bench", distribution=distribution, sampler_seed=0, size=cases_count,
        generator_model="offline/standard", status="finished",
    )  # fmt: skip
    entries = BenchmarkEntry.objects.bulk_create(
        (
            BenchmarkEntry.from_seed(
                benchmark_set,
                seed,
                status="ready",
                complexity="chronic",
                generator_model="offline/standard",
                profile=PROFILE,
                story="Maria wants her metformin refilled before her trip next week. " * 3,
            )  # fmt: skip
            for seed in sample_seeds(cases.distribution_spec(distribution), cases_count, 0)
        ),
        batch_size=BATCH,
    )
    config = agents.agent_configs_ensure_shipped()[0]
    run = Run.objects.create(
        name="Bench run", benchmark_set=benchmark_set, patient_model="offline/patient",
        patient_prompt_version="bench", roster_model="offline/patient", config_hash="bench",
        status="finished",
    )  # fmt: skip
    run_agents = [
        RunAgent.objects.create(run=run, model=m, agent_config=config, label=f"{m} · bench")
        for m in AGENT_MODELS
    ]
    conversations = Conversation.objects.bulk_create(
        (
            Conversation(
                run=run,
                run_agent=run_agents[i % len(run_agents)],
                entry=entries[i // len(run_agents)],
                seed=i,
                status="finished",
                termination_reason="patient_ended",
            )  # fmt: skip
            for i in range(CONVERSATIONS)
        ),
        batch_size=BATCH,
    )
    _short_traces(conversations)
    return run, conversations


def _short_traces(conversations) -> None:
    from benchmark.models import TraceEvent

    TraceEvent.objects.bulk_create(
        (
            TraceEvent(
                conversation=conversation,
                event_id=f"e{n + 1:04d}",
                seq=n,
                turn=n // 2,
                kind=("patient_message", "assistant_message")[n % 2],
                content="I need my metformin refilled, please.",
            )  # fmt: skip
            for conversation in conversations
            for n in range(EVENTS_PER_CONVERSATION)
        ),
        batch_size=BATCH,
    )


def _long_trace(conversation) -> int:
    """Replace the conversation's trace with 15 turns holding 40 tool calls and results."""
    from benchmark.models import TraceEvent

    conversation.events.all().delete()
    events, per_turn = [], -(-LONG_TOOL_CALLS // LONG_TURNS)
    calls = 0
    for turn in range(LONG_TURNS):
        events.append(("patient_message", turn, "", "Could you check what is open next week?"))
        for _ in range(min(per_turn, LONG_TOOL_CALLS - calls)):
            tool = TOOLS[calls % len(TOOLS)]
            events += [("tool_call", turn, tool, ""), ("tool_result", turn, tool, '{"ok": 1}')]
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
    return len(events)


def _study(run, conversations):
    """A target study of 500 conversations, half its clinical seats already taken."""
    from accounts.models import Role, Track, User
    from annotation.models import Assignment, Project, Study, StudyItem
    from jury.models import ScoringJob
    from jury.services import juries, rubrics

    job = ScoringJob.objects.create(run=run, jury=juries.jury_demo_ensure(), status="finished")
    study = Study.objects.create(
        project=Project.objects.create(name="Bench"), name="Bench study", kind="target",
        sample_size=STUDY_ITEMS, seed=3,
    )  # fmt: skip
    study.scoring_jobs.set([job])
    study.rubric_versions.set(rubrics.current_versions())
    step = CONVERSATIONS // STUDY_ITEMS
    items = StudyItem.objects.bulk_create(
        StudyItem(study=study, conversation=conversations[n * step], position=n)
        for n in range(STUDY_ITEMS)
    )
    earlier = [
        User.objects.create_user(
            f"earlier-{n}", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
        )  # fmt: skip
        for n in range(EARLIER_ANNOTATORS)
    ]
    Assignment.objects.bulk_create(
        Assignment(
            item=item,
            annotator=earlier[n % EARLIER_ANNOTATORS],
            track=Track.CLINICAL,
            slot=0,
            status="submitted",
            queue_key=f"{n:016d}",
            scores={"clinical_safety": 3},
        )  # fmt: skip
        for n, item in enumerate(items[: STUDY_ITEMS // 2])
    )
    return study, items


def _median_seconds(action) -> float:
    action()  # warm-up: template compilation, parsed rubrics
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _measure(study, long_item) -> dict[str, float]:
    from django.test import Client
    from django.urls import reverse

    from accounts.models import Role, Track, User
    from annotation.models import Assignment

    reader = User.objects.create_user(
        "reader", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
    )
    _enrol(study, reader)
    assignment = Assignment.objects.create(
        item=long_item, annotator=reader, track=Track.CLINICAL, slot=1, queue_key="reader"
    )
    client = Client()
    client.force_login(reader)
    review_url = reverse("annotation:review", args=[assignment.public_id])

    def review_page():
        if client.get(review_url).status_code != 200:
            raise RuntimeError(f"GET {review_url} failed")

    next_url = reverse("annotation:next", args=[study.pk])
    newcomers = iter(range(REPEATS + 1))

    def next_item():
        newcomer = User.objects.create_user(
            f"new-{next(newcomers)}", role=Role.ANNOTATOR, track=Track.CLINICAL, licensed=True
        )
        _enrol(study, newcomer)
        client.force_login(newcomer)  # not timed: only the POST is
        started = time.perf_counter()
        response = client.post(next_url)
        elapsed = time.perf_counter() - started
        if response.status_code != 302 or "/items/" not in response["Location"]:
            raise RuntimeError(f"POST {next_url} answered {response.status_code}")
        return elapsed

    review = _median_seconds(review_page)
    next_item()  # warm-up
    nexts = statistics.median(next_item() for _ in range(REPEATS))
    return {"review": review, "next": nexts}


def _enrol(study, person) -> None:
    from django.utils import timezone

    from annotation.models import ProjectMember

    ProjectMember.objects.create(
        project=study.project, annotator=person, enrolled_at=timezone.now()
    )


def run() -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-annotation-") as data_dir:
        django_on_fresh_sqlite(data_dir)
        from django.db import connections

        started = time.perf_counter()
        run_row, conversations = _conversations()
        study, items = _study(run_row, conversations)
        long_item = items[-1]
        events = _long_trace(long_item.conversation)
        build_seconds = time.perf_counter() - started
        measured = _measure(study, long_item)
        connections.close_all()
    print(f"(synthetic data stored in {build_seconds:.1f} s; long trace: {events} events)")
    names = {
        "review": f"review page, {LONG_TURNS} turns x {LONG_TOOL_CALLS} tool calls, "
        f"{CONVERSATIONS:,} conversations stored",
        "next": f"next item (reserve a new one), {STUDY_ITEMS}-item study",
    }
    return [
        {
            "name": names[key],
            "measured": round(measured[key] * 1000, 1),
            "target": TARGETS[key] * 1000,
            "unit": "ms",
            "goal": "<",
            "ok": measured[key] < TARGETS[key],
        }
        for key in TARGETS
    ]


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
