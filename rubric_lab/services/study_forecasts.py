"""The forecast of the lab's evaluation launches before their first call: sensitivity studies,
coverage runs, refine studies, ablations and an instance rubric's score. Each lab stage (a
purpose of the calls: perturb, decompose, entail, critique, edit, a judge) is a role of
llm.engine.forecast, learnt from the units of the newest earlier study of the same kind.

A unit is what the study's workers take one at a time: a near-miss pair, a coverage case, a
refinement (one rubric, one arm); an instance score's unit is one criterion's decision. What
an earlier unit used per stage is its `purpose_usage` (evaluation_work keeps it for the
attempt that ended the unit); units that ended before it was kept are not counted.

A dry run forecasts what the launch itself would make: `launch_forecast` calls the launch
service inside a transaction it then rolls back, so the launch's own checks refuse bad input,
its own rules count the units, and nothing is kept or sent (launches only write rows; the
caller starts the job, which a dry run never does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import models, transaction

from jury.models import Jury
from llm.engine.forecast import Forecast, RoleDemand, UnitUsage, forecast
from llm.services.prices import catalog_in_force
from rubric_lab.engine import perturb
from rubric_lab.models import (
    AblationStudy,
    CoverageCase,
    CoverageRun,
    CriterionDecision,
    InstanceRubric,
    InstanceScoreStatus,
    JudgeSetup,
    NearMiss,
    Refinement,
    RefineStudy,
    SensitivityStudy,
)
from rubric_lab.services import coverage, forecasts
from rubric_lab.services.ablations import FLAGS
from rubric_lab.services.instance_scoring import JUDGE_PURPOSE

# Enough earlier units for a stage's mean and spread; more only slow the launch page down.
MAX_UNITS = 300
PENDING, FAILED = "pending", "failed"
SETUP_PURPOSE = {JudgeSetup.INSTANCE: JUDGE_PURPOSE, JudgeSetup.PAIRWISE: "pairwise_judge"}
GENERIC_PURPOSE = "judge"  # the six-rubric jury's calls (jury.services.scoring)


def no_source(kind: str) -> str:
    return (
        f"No earlier {kind} to forecast from: launch a small one first (a few references, "
        "or offline models for a pilot), then come back."
    )


@dataclass(frozen=True)
class Stage:
    """One role of a launch: its name, the purpose of its calls, the model it calls, and the
    share of the earlier units' calls of that purpose it makes (a jury seat's share)."""

    role: str
    purpose: str
    model: str
    share: float = 1.0
    observed: bool = True  # False: the earlier study never ran this stage (not free: unknown)


# --- the dry run ------------------------------------------------------------------------------


def launch_forecast(launch: Callable[[], models.Model]) -> Forecast:
    """The forecast of what `launch()` makes, with everything it made undone. The launch's
    refusal (its own error type) reaches the caller as from a real launch."""
    with transaction.atomic():
        job = launch()
        result = job_forecast(job)
        transaction.set_rollback(True)
    return result


def job_forecast(job: models.Model) -> Forecast:
    """The forecast of a launched, not yet started evaluation job of the lab."""
    builders = {
        SensitivityStudy: _sensitivity_demands,
        CoverageRun: _coverage_demands,
        RefineStudy: _refine_demands,
        AblationStudy: _ablation_demands,
    }
    demands, note = builders[type(job)](job)
    batch = getattr(job, "batch", False)  # the kinds with batch mode: every call at its price
    result = forecast(demands, catalog_in_force().price_for, batch=batch)
    result.source = note + (", in batches (batch price)" if batch else "")
    return result


# --- sensitivity --------------------------------------------------------------------------------


def _sensitivity_demands(study: SensitivityStudy) -> tuple[list[RoleDemand], str]:
    return sensitivity_demands(
        setup=study.setup,
        kinds=list(study.perturbations),
        pairs=study.pairs.count(),
        perturber_model=study.perturber_model,
        judge_model=study.judge_model,
        jury=study.jury,
        exclude=[study.pk],
    )


def sensitivity_demands(
    *,
    setup: str,
    kinds: list[str],
    pairs: int,
    perturber_model: str,
    judge_model: str = "",
    jury: Jury | None = None,
    exclude: Iterable[int] = (),
) -> tuple[list[RoleDemand], str]:
    """A study of `pairs` near-miss pairs of the perturbation `kinds`: the editor's calls and
    the judge setup's (each jury seat for the six-rubric setup), from the newest earlier study
    of the same setup (else any, whose judges then teach nothing)."""
    earlier = SensitivityStudy.objects.exclude(pk__in=list(exclude))
    source = _newest(earlier.filter(setup=setup), NearMiss, "study") or _newest(
        earlier, NearMiss, "study"
    )
    stages = [Stage("stage: perturb", "perturb", perturber_model)]
    same_setup = source is not None and source.setup == setup
    if setup == JudgeSetup.GENERIC:
        seats = len(source.jury.judges) if same_setup and source.jury else 1
        stages += [
            Stage(f"judge seat {seat}", GENERIC_PURPOSE, model, 1 / seats, same_setup)
            for seat, model in enumerate(jury.judges if jury else [], start=1)
        ]
    else:
        role = f"stage: {JudgeSetup(setup).name.lower()} judging"
        stages.append(Stage(role, SETUP_PURPOSE[setup], judge_model, observed=same_setup))
    units = _finished(source.pairs.filter(kind__in=kinds)) if source else []
    note = _note(source, "sensitivity study", len(units), "pairs of the same perturbation types")
    return _demands(stages, pairs, units, note), note


# --- coverage -------------------------------------------------------------------------------


def _coverage_demands(run: CoverageRun) -> tuple[list[RoleDemand], str]:
    return coverage_demands(
        cases=run.cases.count(),
        judge_model=run.judge_model,
        generation_job=run.generation_job,
        exclude=[run.pk],
    )


def coverage_demands(
    *, cases: int, judge_model: str, generation_job=None, exclude: Iterable[int] = ()
) -> tuple[list[RoleDemand], str]:
    """A coverage run of `cases` rubrics: the decomposition of the expert criteria and the
    entailment judgement, from the newest earlier run (of the same generation job if any)."""
    earlier = CoverageRun.objects.exclude(pk__in=list(exclude))
    source = _newest(
        earlier.filter(generation_job=generation_job), CoverageCase, "coverage_run"
    ) or _newest(earlier, CoverageCase, "coverage_run")
    stages = [
        Stage("stage: decompose", "coverage_decompose", judge_model),
        Stage("stage: entail", "coverage_entail", judge_model),
    ]
    units = _finished(source.cases.all()) if source else []
    note = _note(source, "coverage run", len(units), "cases")
    return _demands(stages, cases, units, note), note


# --- refine ---------------------------------------------------------------------------------


def _refine_demands(study: RefineStudy) -> tuple[list[RoleDemand], str]:
    earlier = RefineStudy.objects.exclude(pk=study.pk)
    source = _newest(
        earlier.filter(generation_job=study.generation_job), Refinement, "study"
    ) or _newest(earlier, Refinement, "study")
    stages = [
        Stage("stage: critique", "refine_critique", study.evaluator_model),
        Stage("stage: edit", "refine_edit", study.editor_model),
        Stage("stage: independent judge", GENERIC_PURPOSE, study.judge_model),
    ]
    if study.criteria_judge_model:
        seen = source is not None and bool(source.criteria_judge_model)
        role = "stage: expert-criteria judge"
        stages.append(Stage(role, JUDGE_PURPOSE, study.criteria_judge_model, observed=seen))
    units = _finished(source.refinements.all()) if source else []
    note = _note(source, "refine study", len(units), "refinements (rubric x arm)")
    return _demands(stages, study.refinements.count(), units, note), note


# --- ablations ------------------------------------------------------------------------------


def _ablation_demands(study: AblationStudy) -> tuple[list[RoleDemand], str]:
    """Each variant's generation job, then the instance-rubric sensitivity study and the
    coverage run its watch launches once the rubrics exist (as if every variant gives every
    conversation a rubric)."""
    arms = list(study.arms.select_related("generation_job"))
    references = arms[0].generation_job.generations.count() if arms else 0
    kinds = list(perturb.REGISTRY)
    demands, notes = [], []
    for arm in arms:
        job, label = arm.generation_job, arm.get_variant_display()
        flags = FLAGS[arm.variant]
        parts = [
            forecasts.generation_demands(
                run=study.run,
                conversations=job.generations.count(),
                generator_model=study.generator_model,
                **flags,
            ),
            sensitivity_demands(
                setup=JudgeSetup.INSTANCE,
                kinds=kinds,
                pairs=references * len(kinds),
                perturber_model=study.perturber_model,
                judge_model=study.judge_model,
            ),
        ]
        with_criteria = _with_expert_criteria(job)
        if with_criteria:
            parts.append(coverage_demands(cases=with_criteria, judge_model=study.judge_model))
        for part, note in parts:
            demands += [_renamed(demand, f"{label} · {demand.role}") for demand in part]
            notes.append(note)
    return demands, "; ".join(dict.fromkeys(notes))


def _with_expert_criteria(job) -> int:
    """How many of the job's conversations have expert criteria (its coverage run's cases)."""
    found = job.generations.filter(coverage.with_expert_criteria())
    return found.values("conversation_id").distinct().count()


def _renamed(demand: RoleDemand, role: str) -> RoleDemand:
    return RoleDemand(role, demand.model, demand.units, demand.observed, demand.basis)


# --- an instance rubric's score ---------------------------------------------------------------


def score_forecast(*, rubric: InstanceRubric, conversation, judge_model: str) -> Forecast:
    """Scoring `conversation` with `rubric` by `judge_model`: one decision per criterion, each
    forecast from the newest earlier valid scores' decisions (of the same rubric if any). A
    valid score by the same judge already exists: it is answered as it is, for nothing."""
    done = rubric.scores.filter(
        conversation=conversation, judge_model=judge_model, status=InstanceScoreStatus.VALID
    ).exists()
    decisions = CriterionDecision.objects.filter(score__status=InstanceScoreStatus.VALID)
    own = decisions.filter(score__rubric=rubric)
    chosen = own if own.exists() else decisions
    rows = list(
        chosen.order_by("-pk").values_list("input_tokens", "output_tokens", "attempts")[:MAX_UNITS]
    )
    units = [
        UnitUsage(calls=len(tries) or 1, input_tokens=sent, output_tokens=answered)
        for sent, answered, tries in rows
    ]
    where = "this rubric" if chosen is own else "other rubrics"
    note = (
        f"{len(units)} criterion decisions of earlier valid scores with {where}"
        if units
        else no_source("valid instance score")
    )
    criteria = 0 if done else rubric.criteria.count()
    demand = RoleDemand("stage: scoring", judge_model, criteria, units, note if units else "")
    result = forecast([demand], catalog_in_force().price_for)
    result.source = note + (" (this judge's valid score exists: nothing to call)" if done else "")
    return result


# --- shared -------------------------------------------------------------------------------------


def _newest(jobs: models.QuerySet, unit_model, job_field: str):
    """The newest of `jobs` with an ended unit whose stages were kept."""
    ended = unit_model.objects.exclude(status__in=(PENDING, FAILED)).filter(
        purpose_usage__isnull=False
    )
    return jobs.filter(pk__in=ended.values(f"{job_field}_id")).order_by("-pk").first()


def _finished(units: models.QuerySet) -> list[dict]:
    ended = units.exclude(status__in=(PENDING, FAILED)).filter(purpose_usage__isnull=False)
    return list(ended.order_by("-pk").values_list("purpose_usage", flat=True)[:MAX_UNITS])


def _note(source, kind: str, observed: int, units: str) -> str:
    if source is None:
        return no_source(kind)
    return f"{observed} {units} of {kind} {source.pk} {source.name!r}"


def _demands(stages: list[Stage], units: int, observed: list[dict], basis: str) -> list[RoleDemand]:
    return [
        RoleDemand(
            stage.role,
            stage.model,
            units,
            [_usage(unit, stage) for unit in observed] if stage.observed else [],
            basis,
        )
        for stage in stages
    ]


def _usage(unit: dict, stage: Stage) -> UnitUsage:
    row = unit.get(stage.purpose) or {}
    return UnitUsage(
        calls=round(row.get("calls", 0) * stage.share),
        input_tokens=round(row.get("input_tokens", 0) * stage.share),
        output_tokens=round(row.get("output_tokens", 0) * stage.share),
        cached_input_tokens=round(row.get("cached_input_tokens", 0) * stage.share),
        cache_write_tokens=round(row.get("cache_write_tokens", 0) * stage.share),
    )
