"""The load window's world, built through the real services (offline scripted provider, no
latency: built in this process before the window opens), and what the window wrote.

- a benchmark set, a run of it played here and scored here by the offline jury;
- a target study drawn from that scoring job, and licensed annotators of both tracks, half
  each, with passwords (locust logs in as them);
- a run launched but not started, big enough to keep `run_threads` conversations in flight for
  the whole window;
- a second offline jury, whose scoring jobs re-score the played run during the window, one
  after the other, so judge scores are written throughout.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field

from django.contrib.auth.hashers import make_password

from accounts.models import Role, Track, User
from annotation.models import Assignment, Study
from annotation.services.enrolment import member_enrol
from annotation.services.studies import StudySpec, study_create
from bench.load.size import CONVERSATION_SECONDS, LoadSize
from benchmark.models import ConversationStatus, Run
from benchmark.services import agents, cases, conversations
from benchmark.services.runs import AgentChoice, run_cancel, run_launch
from jobs.models import JobStatus
from jury.models import JudgeScore, Jury, ScoreStatus, ScoringJob
from jury.services import juries, scoring
from jury.services.rubrics import current_versions

AGENT_MODELS = ("offline/careful", "offline/careless")
STUDY_JUDGES = ("offline/standard",)  # the study only needs the jury's scores to sample by
LOAD_JUDGES = ("offline/standard", "offline/lenient")
PATIENT_MODEL = "offline/patient"


@dataclass
class Scenario:
    study: Study
    played_run: Run
    load_run: Run
    load_jury: Jury
    logins: list[dict] = field(default_factory=list)
    scoring_jobs: list[ScoringJob] = field(default_factory=list)


def scenario_build(size: LoadSize) -> Scenario:
    cases_count = size.study_items // 2 + 3  # spare cases: infeasible ones are left out
    benchmark_set = cases.benchmark_set_create(
        name="Load set", distribution=cases.distribution_default_ensure(), size=cases_count,
        sampler_seed=12, generator_model="offline/standard",
    )  # fmt: skip
    for entry_id in cases.pending_entry_ids(benchmark_set):
        cases.entry_enrich(entry_id)
    config = {c.slug: c for c in agents.agent_configs_ensure_shipped()}["baseline"]
    played = _played_run(benchmark_set, config)
    study_jury = juries.jury_create(name="Study jury", judges=list(STUDY_JUDGES))
    job = scoring.scoring_launch(run=played, jury=study_jury)
    for score_id in scoring.pending_score_ids(job):
        scoring.judge_score_execute(score_id)
    study = study_create(
        spec=StudySpec(project_name="Load project", name="Load study", kind="target",
                       sample_size=size.study_items, seed=12),
        scoring_jobs=[job], rubric_versions=current_versions(),
    )  # fmt: skip
    return Scenario(
        study=study,
        played_run=played,
        load_run=_load_run(benchmark_set, size),
        load_jury=juries.jury_create(name="Load jury", judges=list(LOAD_JUDGES)),
        logins=_annotators(size.annotators, study),
    )


def _played_run(benchmark_set, config) -> Run:
    run = run_launch(
        name="Played run", benchmark_set=benchmark_set, patient_model=PATIENT_MODEL,
        agents=[AgentChoice(model, config) for model in AGENT_MODELS],
    )  # fmt: skip
    for conversation_id in run.conversations.values_list("id", flat=True):
        conversations.conversation_execute(conversation_id)
    run.refresh_from_db()
    return run


def _load_run(benchmark_set, size: LoadSize) -> Run:
    """Every model with every shipped configuration, repeated until the run cannot finish
    inside the window even at full speed."""
    choices = [
        AgentChoice(model, config)
        for model in AGENT_MODELS
        for config in agents.latest_agent_configs()
    ]
    per_repetition = benchmark_set.entries.filter(status="ready").count() * len(choices)
    needed = size.run_threads * size.seconds / CONVERSATION_SECONDS
    return run_launch(
        name="Load run", benchmark_set=benchmark_set, patient_model=PATIENT_MODEL,
        agents=choices, repetitions=max(1, math.ceil(needed / per_repetition)),
        concurrency=size.run_threads, use_cache=False,
    )  # fmt: skip


def _annotators(count: int, study: Study) -> list[dict]:
    """Licensed annotators, alternating tracks, enrolled in the study's project. They share one
    password, hashed once: the site's hasher is slow on purpose, and the logins during the
    window pay for it anyway."""
    password = secrets.token_urlsafe(12)
    hashed = make_password(password)
    logins = []
    for number in range(count):
        track = (Track.CLINICAL, Track.OPERATIONAL)[number % 2]
        username = f"load-{track}-{number // 2 + 1}"
        person = User.objects.create(
            username=username, password=hashed, role=Role.ANNOTATOR, track=track, licensed=True
        )
        member_enrol(project=study.project, annotator=person, actor=None)
        logins.append({"username": username, "password": password})
    return logins


# --- during the window -------------------------------------------------------------------------


def scoring_keep_busy(scenario: Scenario, concurrency: int) -> ScoringJob | None:
    """Start a scoring job of the played run with the load jury when none is running, so
    scores are written for the whole window; returns the job started, if any."""
    from jury.services.scoring import scoring_start

    running = [j for j in scenario.scoring_jobs if _job_status(j) == JobStatus.RUNNING]
    if running:
        return None
    job = scoring.scoring_launch(
        run=scenario.played_run, jury=scenario.load_jury, use_cache=False,
        concurrency=concurrency,
    )  # fmt: skip
    scoring_start(job)
    scenario.scoring_jobs.append(job)
    return job


def _job_status(job: ScoringJob) -> str:
    return ScoringJob.objects.filter(pk=job.pk).values_list("status", flat=True).get()


def load_run_start(scenario: Scenario) -> None:
    from benchmark.tasks import run_dispatch_task

    run_dispatch_task.delay(scenario.load_run.pk)


def written(scenario: Scenario) -> dict[str, int]:
    """What the workers wrote so far: finished and failed conversations, judge scores."""
    statuses = scenario.load_run.conversations
    return {
        "conversations": statuses.filter(status=ConversationStatus.FINISHED).count(),
        "conversations_failed": statuses.filter(status=ConversationStatus.FAILED).count(),
        "scores": JudgeScore.objects.filter(job__in=scenario.scoring_jobs)
        .exclude(status=ScoreStatus.PENDING)
        .count(),
        "score_errors": JudgeScore.objects.filter(
            job__in=scenario.scoring_jobs, status=ScoreStatus.ERROR
        ).count(),
    }


def stop_work(scenario: Scenario) -> None:
    """Cancel the load run and the running scoring jobs, so the workers stop taking work."""
    run_cancel(scenario.load_run)
    ScoringJob.objects.filter(pk__in=[j.pk for j in scenario.scoring_jobs]).filter(
        status=JobStatus.RUNNING
    ).update(status=JobStatus.CANCELLED)


def stored_annotations(study: Study) -> dict[str, dict]:
    """Every assignment of the study as the database holds it, by public id."""
    rows = Assignment.objects.filter(item__study=study).values(
        "public_id", "scores", "feedback", "event_links", "overall_comment", "status"
    )
    return {str(row.pop("public_id")): row for row in rows}
