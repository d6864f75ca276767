"""Cost limits of the rubric lab's jobs, through jobs.services.cost_limits: the models each
kind of job calls, what it spent, and the ablation study's limit over the jobs it launched.

An ablation runs its own generation jobs, then a sensitivity study and a coverage run per
variant: its limit covers all of them. When their total reaches it the ablation is paused, and
each of its jobs pauses with it the next time it would send work; resuming the ablation with
a higher limit resumes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.db import models
from django.db.models import F

from jobs.models import JobStatus
from jobs.services import accounting, cost_limits
from jobs.services.cost_limits import cost_limit_reached, money, spent_of
from rubric_lab.models import (
    AblationArm,
    AblationStudy,
    CoverageRun,
    GenerationJob,
    InstanceScore,
    JudgeSetup,
    RefineStudy,
    SensitivityStudy,
)


def job_models(job: models.Model) -> list[str]:
    """Every model the job calls (a saved job or one about to be saved)."""
    if isinstance(job, GenerationJob):
        return [job.generator_model, *([job.judge_model] if job.judge_model else [])]
    if isinstance(job, SensitivityStudy):
        judges = job.jury.judges if job.setup == JudgeSetup.GENERIC else [job.judge_model]
        return [job.perturber_model, *judges]
    if isinstance(job, CoverageRun):
        return [job.judge_model]
    if isinstance(job, RefineStudy):
        extra = [job.criteria_judge_model] if job.criteria_judge_model else []
        return [job.evaluator_model, job.editor_model, job.judge_model, *extra]
    if isinstance(job, AblationStudy):
        return [job.generator_model, job.judge_model, job.perturber_model]
    raise TypeError(f"{type(job).__name__} is not a rubric-lab job")


def job_spent(job: models.Model) -> Decimal:
    """What the job's calls cost so far (priced calls; a limit needs every model priced)."""
    if isinstance(job, GenerationJob):
        return spent_of(job.generations.all()) + spent_of(_own_scores(job))
    if isinstance(job, SensitivityStudy):
        return spent_of(job.pairs.all())
    if isinstance(job, CoverageRun):
        return spent_of(job.cases.all())
    if isinstance(job, RefineStudy):
        return spent_of(job.refinements.all())
    if isinstance(job, AblationStudy):
        return sum((job_spent(part) for part in ablation_parts(job)), Decimal(0))
    raise TypeError(f"{type(job).__name__} is not a rubric-lab job")


def job_model_costs(job: models.Model) -> list[dict]:
    """Per model the job called: calls, cached calls, tokens and cost (accounting rows)."""
    return accounting.model_cost_rows(_stored_costs(job))


def _stored_costs(job: models.Model) -> Iterable[dict]:
    if isinstance(job, AblationStudy):
        for part in ablation_parts(job):
            yield from _stored_costs(part)
        return
    units = {
        GenerationJob: lambda: [job.generations.all(), _own_scores(job)],
        SensitivityStudy: lambda: [job.pairs.all()],
        CoverageRun: lambda: [job.cases.all()],
        RefineStudy: lambda: [job.refinements.all()],
    }[type(job)]()
    for rows in units:
        yield from rows.values_list("model_costs", flat=True)


def _own_scores(job: GenerationJob):
    """The scores the job's judge gave each new rubric's own conversation."""
    return InstanceScore.objects.filter(
        rubric__generation__job=job,
        judge_model=job.judge_model,
        conversation=F("rubric__conversation"),
    )


def launch_refusal(job: models.Model) -> str:
    """Why the (unsaved) job cannot take its cost limit ("" when it can)."""
    return cost_limits.cost_limit_refusal(models=job_models(job), cost_limit_usd=job.cost_limit_usd)


def limit_reached(job: models.Model) -> bool:
    """The dispatchers' check: True (and the job paused) once the job, or the ablation it
    belongs to, spent its limit."""
    study = ablation_of(job)
    if study is not None and cost_limit_reached(study, spent=lambda: job_spent(study)):
        type(job).objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(
            status=JobStatus.PAUSED,
            stop_reason=f"Paused with its ablation study {study.name!r}, which reached its cost "
            f"limit of {money(study.cost_limit_usd)}. Resume the ablation study to continue.",
        )
        return True
    return cost_limit_reached(job, spent=lambda: job_spent(job))


def ablation_of(job: models.Model) -> AblationStudy | None:
    field = {
        GenerationJob: "generation_job",
        SensitivityStudy: "sensitivity_study",
        CoverageRun: "coverage_run",
    }.get(type(job))
    if field is None:
        return None
    arm = AblationArm.objects.filter(**{field: job}).select_related("study").first()
    return arm.study if arm else None


def ablation_parts(study: AblationStudy) -> Iterable[models.Model]:
    arms = study.arms.select_related("generation_job", "sensitivity_study", "coverage_run")
    for arm in arms:
        for part in (arm.generation_job, arm.sensitivity_study, arm.coverage_run):
            if part is not None:
                yield part


def job_resume(job: models.Model, *, cost_limit_usd: Decimal | None) -> list[models.Model]:
    """Set a job paused at its cost limit running again (an ablation with its paused parts);
    returns the jobs the caller must start again. Raises CostLimitError."""
    cost_limits.job_resume(
        job, spent=job_spent(job), models=job_models(job), cost_limit_usd=cost_limit_usd
    )
    if not isinstance(job, AblationStudy):
        return [job]
    paused = [part for part in ablation_parts(job) if part.status == JobStatus.PAUSED]
    for part in paused:
        type(part).objects.filter(pk=part.pk, status=JobStatus.PAUSED).update(
            status=JobStatus.RUNNING, stop_reason=""
        )
    return [job, *paused]
