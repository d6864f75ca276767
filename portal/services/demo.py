"""The demo site's data, produced by the real pipeline with the offline scripted provider."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from accounts.models import Role, User
from alignment.services import calibration
from alignment.services.rescoring import study_rescore
from annotation.models import Study
from annotation.services.demo import CALIBRATION_SAMPLE, DEMO_PROJECT, TARGET_STUDY
from benchmark.models import BenchmarkSet, EntryStatus, Run
from benchmark.services import agents as agent_services
from benchmark.services import cases, runs
from fidelity.models import FidelityReview, ReviewStatus
from fidelity.services import reviews
from jobs.models import JobStatus
from jobs.services.workers import worker_start, worker_stop
from jury.models import Jury, ScoringJob
from jury.services import juries, scoring

DEMO_SET = "Demo set (scripted)"
DEMO_RUN = "Demo run (scripted)"
DEMO_SET_SIZE = 24
DEMO_MODELS = ("offline/careful", "offline/careless")
DEMO_AGENTS = ("baseline", "clinically_grounded")
DEMO_REVIEWER = "offline/reviewer"
DEMO_CALIBRATION_VARIANT = "weights_map"

Waiter = Callable[[Callable[[], int], int, str], None]


def demo_set_ensure(
    start: Callable[[BenchmarkSet], None], wait: Waiter, size: int = DEMO_SET_SIZE
) -> BenchmarkSet:
    """The demo set, sampled with `size` cases the first time, then reused."""
    benchmark_set = BenchmarkSet.objects.filter(name=DEMO_SET).first()
    if benchmark_set is None:
        benchmark_set = cases.benchmark_set_create(
            name=DEMO_SET,
            distribution=cases.distribution_default_ensure(),
            size=size,
            sampler_seed=2026,
            generator_model="offline/standard",
        )
    start(benchmark_set)
    wait(
        lambda: benchmark_set.entries.exclude(status=EntryStatus.PENDING).count(),
        benchmark_set.size,
        "demo cases",
    )
    return benchmark_set


def demo_run_ensure(
    benchmark_set: BenchmarkSet, dispatch: Callable[[Run], None], wait: Waiter
) -> Run:
    run = Run.objects.filter(name=DEMO_RUN).first()
    if run is None:
        agent_services.agent_configs_ensure_shipped()
        latest = {c.slug: c for c in agent_services.latest_agent_configs()}
        run = runs.run_launch(
            name=DEMO_RUN,
            benchmark_set=benchmark_set,
            agents=[runs.AgentChoice(m, latest[a]) for m in DEMO_MODELS for a in DEMO_AGENTS],
            patient_model="offline/patient",
            concurrency=16,
        )
    if run.status == JobStatus.RUNNING:
        dispatch(run)
        total = run.conversations.count()
        wait(
            lambda: run.conversations.filter(
                status__in=("finished", "failed", "cancelled")
            ).count(),
            total,
            "demo conversations",
        )
    return run


def demo_scoring_ensure(run: Run, start: Callable, wait: Waiter):
    """Score the demo run with the scripted jury (standard + strict judges)."""
    jury = juries.jury_demo_ensure()
    job = ScoringJob.objects.filter(run=run, jury=jury).first()
    if job is None:
        job = scoring.scoring_launch(run=run, jury=jury)
    _score_and_wait([job], start, wait, "demo judge calls")
    return job


def demo_review_ensure(run: Run, start: Callable, wait: Waiter) -> FidelityReview:
    """Review the demo run's simulated patient with the scripted reviewer, so the run page,
    the review's report and the model report's split by fidelity have something to show."""
    review = run.fidelity_reviews.filter(reviewer_model=DEMO_REVIEWER).first()
    if review is None:
        review = reviews.review_launch(run=run, reviewer_model=DEMO_REVIEWER)
    start(review)
    units = review.conversation_reviews
    wait(
        lambda: units.exclude(status=ReviewStatus.PENDING).count(),
        units.count(),
        "demo fidelity reviews",
    )
    return review


def demo_calibration_ensure(start: Callable, wait: Waiter) -> Jury | None:
    """Calibrate the demo jury to the simulated clinicians of the calibration sample: score the
    examples variant fold by fold, promote judge weights + jury score map to version 2 and
    re-score the sample with it, so the calibration page, the jury's versions and the history
    have something to show. None when the demo is too small for the sample study."""
    study = Study.objects.filter(project__name=DEMO_PROJECT, name=CALIBRATION_SAMPLE).first()
    if study is None:
        return None
    researcher = User.objects.filter(role=Role.RESEARCHER).order_by("pk").first()
    inputs = calibration.calibration_inputs(study, include_synthetic=True)
    if any(not fold.jobs for fold in calibration.example_folds(study, inputs)):
        calibration.examples_launch(study, include_synthetic=True, user=researcher)
    folds = calibration.example_folds(study, inputs)
    _score_and_wait(calibration.examples_jobs(folds), start, wait, "demo calibration examples")
    promoted = calibration.promoted_versions(study)
    if promoted:
        version = promoted[0]
        jobs = list(version.jobs.all())
    else:
        version = calibration.variant_promote(
            study, variant=DEMO_CALIBRATION_VARIANT, include_synthetic=True, user=researcher
        )
        jobs = calibration.promoted_rescore(study, jury_pk=version.pk, user=researcher)
        # The target study too: the new version is measured there on the conversations it
        # did not learn from, which is what the target study's jury history shows.
        target = Study.objects.filter(project__name=DEMO_PROJECT, name=TARGET_STUDY).first()
        if target is not None:
            versions = calibration.judged_versions(target)
            jobs += study_rescore(target, jury=version, rubric_versions=versions, user=researcher)
    _score_and_wait(jobs, start, wait, "demo re-score with the calibrated jury")
    return version


def _score_and_wait(jobs: list[ScoringJob], start: Callable, wait: Waiter, label: str) -> None:
    for job in jobs:
        start(job)
    total = sum(job.scores.count() for job in jobs)
    wait(
        lambda: total - sum(scoring.scoring_progress(job)["pending"] for job in jobs),
        total,
        label,
    )


# --- the demo's own worker -------------------------------------------------------------------

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def demo_worker() -> Iterator[subprocess.Popen]:
    """A worker that lives exactly as long as the demo.

    The worker runs in its own session, so Ctrl-C in the terminal reaches only the demo, and
    Python's default SIGTERM and SIGHUP would end the demo without any cleanup: both are turned
    into SystemExit here, so every way the demo stops goes through the `finally` that stops
    the worker.
    """
    previous = {sig: signal.signal(sig, _exit_on_signal) for sig in STOP_SIGNALS}
    worker = worker_start()
    try:
        yield worker
    finally:
        worker_stop(worker)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_on_signal(signum: int, frame) -> None:
    raise SystemExit(128 + signum)
