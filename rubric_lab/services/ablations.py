"""Ablations in one click: the pipeline in full, without routing, interaction intent, the
medical-fact agent or audit, and the direct-generation baseline (one model call), on the same
reference conversations; once a variant's rubrics exist, a coverage run (for conversations with
expert criteria) and an instance-rubric sensitivity study follow, and the page puts the six side
by side, each variant's coverage tested against the full pipeline's with McNemar's test on the
constraints both runs judged.

The chain advances from the ablation's watch (`ablation_advance`), so it needs no button and
survives a worker restart like every other job. A batch ablation launches every part of the
chain in batch mode (with its choice to resend failures live): the rubric generations, then
each variant's coverage run and sensitivity study, so its models are checked for a batch API
at launch, not when the watch reaches them.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from django.db import transaction

from benchmark.models import Run
from jobs.models import JobStatus
from jobs.services import finish
from jobs.services.starts import job_start
from llm.engine.chat import ProviderError
from llm.engine.providers.model_strings import check_model_string
from rubric_lab.engine import perturb
from rubric_lab.models import (
    AblationArm,
    AblationStudy,
    AblationVariant,
    InstanceRubric,
    JudgeSetup,
)
from rubric_lab.services import budgets, coverage, sensitivity, study_batches
from rubric_lab.services.pipeline import PipelineLaunchError, generation_job_launch

FLAGS = {
    AblationVariant.FULL: {},
    AblationVariant.NO_ROUTING: {"skip_routing": True},
    AblationVariant.NO_INTENT: {"skip_intent": True},
    AblationVariant.NO_FACTS: {"skip_facts": True},
    AblationVariant.NO_AUDIT: {"skip_audit": True},
    AblationVariant.DIRECT: {"method": "direct"},
}


# A part paused with the ablation at its cost limit is not over: it resumes with the ablation.
UNFINISHED = (JobStatus.RUNNING, JobStatus.PAUSED)


class AblationError(ValueError):
    """An ablation cannot be launched as asked; the message says why."""


@transaction.atomic
def ablation_launch(
    *,
    run: Run,
    generator_model: str,
    judge_model: str,
    perturber_model: str,
    reference_model: str = "",
    max_cases: int = 10,
    name: str = "",
    use_cache: bool = True,
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> AblationStudy:
    """The study and its generation jobs (one per variant) on the same conversations."""
    references = sensitivity.reference_conversations(
        run, reference_model=reference_model, generation_job=None, limit=max_cases
    )
    if not references:
        raise AblationError(f"Run {run.name!r} has no finished conversation to build rubrics for.")
    try:
        sensitivity.study_options_check(
            setup=JudgeSetup.INSTANCE,
            perturbations=list(perturb.REGISTRY),
            perturber_model=perturber_model,
            judge_model=judge_model,
            max_cases=max_cases,
        )
        # The same judge runs the coverage follow-ups: refuse it now, not from the watch.
        check_model_string(judge_model, purpose="coverage_entail")
    except (sensitivity.StudyError, ProviderError) as error:
        raise AblationError(str(error)) from None
    if batch:
        study_batches.models_check([generator_model, judge_model, perturber_model], AblationError)
    study = AblationStudy(
        name=name.strip() or f"Ablations on {run.name}",
        run=run,
        generator_model=generator_model,
        judge_model=judge_model,
        perturber_model=perturber_model,
        reference_model=reference_model,
        max_cases=max_cases,
        use_cache=use_cache,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        created_by=user,
    )
    if refusal := budgets.launch_refusal(study):
        raise AblationError(refusal)
    study.save()
    for variant, flags in FLAGS.items():
        try:
            job = generation_job_launch(
                conversations=references,
                generator_model=generator_model,
                run=run,
                name=f"{study.name}: {variant.label}",
                use_cache=use_cache,
                user=user,
                **_mode(study),
                **flags,
            )
        except PipelineLaunchError as error:
            raise AblationError(str(error)) from None
        AblationArm.objects.create(study=study, variant=variant, generation_job=job)
    return study


def _mode(study: AblationStudy) -> dict:
    """The batch mode every job of the ablation is launched with."""
    return {"batch": study.batch, "batch_resend_live": study.batch_resend_live}


def ablation_start(study: AblationStudy) -> None:
    """Start every variant's rubric generation and the ablation's watch, which starts each
    variant's coverage and sensitivity studies as its rubrics finish."""
    for arm in study.arms.select_related("generation_job"):
        job_start(arm.generation_job)
    job_start(study)


def ablation_advance(
    study: AblationStudy,
    *,
    start_sensitivity: Callable,
    start_coverage: Callable,
) -> bool:
    """Start what each variant's finished rubrics allow; True while anything still runs (an
    ablation paused at its cost limit waits for a resume, which starts its watch again)."""
    study.refresh_from_db(fields=["status"])
    if study.status != JobStatus.RUNNING:
        return False
    for arm in study.arms.select_related("generation_job", "sensitivity_study", "coverage_run"):
        job = arm.generation_job
        if job.status in UNFINISHED or arm.sensitivity_study_id:
            continue
        # A variant that produced no rubric has nothing to evaluate; its row says so.
        if InstanceRubric.objects.filter(generation__job=job).exists():
            _follow_up(study, arm, start_sensitivity, start_coverage)
    return _finish_if_done(study)


def _follow_up(study, arm, start_sensitivity, start_coverage) -> None:
    with transaction.atomic():
        arm = AblationArm.objects.select_for_update().get(pk=arm.pk)
        if arm.sensitivity_study_id:
            return
        study_row = sensitivity.study_launch(
            run=study.run,
            setup=JudgeSetup.INSTANCE,
            perturber_model=study.perturber_model,
            judge_model=study.judge_model,
            generation_job=arm.generation_job,
            reference_model=study.reference_model,
            max_cases=study.max_cases,
            use_cache=study.use_cache,
            name=f"{study.name}: {arm.get_variant_display()}",
            user=study.created_by,
            **_mode(study),
        )
        arm.sensitivity_study = study_row
        if _has_expert_criteria(arm.generation_job):
            arm.coverage_run = coverage.coverage_launch(
                generation_job=arm.generation_job,
                judge_model=study.judge_model,
                use_cache=study.use_cache,
                user=study.created_by,
                **_mode(study),
            )
        arm.save()
    start_sensitivity(arm.sensitivity_study)
    if arm.coverage_run is not None:
        start_coverage(arm.coverage_run)


def _has_expert_criteria(job) -> bool:
    rubrics = InstanceRubric.objects.filter(generation__job=job)
    return rubrics.filter(coverage.with_expert_criteria()).exists()


def _finish_if_done(study: AblationStudy) -> bool:
    arms = list(study.arms.select_related("generation_job", "sensitivity_study", "coverage_run"))
    running = any(
        job is not None and job.status in UNFINISHED
        for arm in arms
        for job in (arm.generation_job, arm.sensitivity_study, arm.coverage_run)
    )
    waiting = any(
        not arm.sensitivity_study_id
        and InstanceRubric.objects.filter(generation__job=arm.generation_job).exists()
        for arm in arms
    )
    if running or waiting:
        return True
    finish.job_finish(study)
    return False


def running_ablation_ids() -> list[int]:
    return list(AblationStudy.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


def ablation_rows(study: AblationStudy) -> list[dict]:
    """One row per variant: rubrics made, coverage overall and its McNemar test against the
    full pipeline's (same expert criteria, constraint by constraint), sensitivity pooled over
    types."""
    arms = list(study.arms.select_related("generation_job", "sensitivity_study", "coverage_run"))
    full = next((a.coverage_run for a in arms if a.variant == AblationVariant.FULL), None)
    rows = []
    for arm in arms:
        pooled = None
        if arm.sensitivity_study is not None:
            pooled = sensitivity.study_results(arm.sensitivity_study)[-1]
        overall = compared = None
        if arm.coverage_run is not None:
            overall = coverage.coverage_results(arm.coverage_run)["overall"]
            if full is not None and arm.variant != AblationVariant.FULL:
                compared = coverage.coverage_compare(full, arm.coverage_run).overall
        rows.append(
            {
                "arm": arm,
                "rubrics": InstanceRubric.objects.filter(
                    generation__job=arm.generation_job
                ).count(),
                "coverage": overall,
                "versus_full": compared,
                "sensitivity": pooled["sensitivity"] if pooled else None,
            }
        )
    return rows
