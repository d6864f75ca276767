"""A rubric-generation job's forecast before it is launched: each stage's calls, tokens and
cost (prompt-cache reads included), learnt from an earlier generation job's calls
(llm.engine.forecast does the arithmetic). A unit is one conversation's generation: what its
calls of one stage used, repairs and audit rounds included; the new job has one per
conversation it is launched on.

The earlier job is the newest one with finished generations of the same method on the same
run, else of the same method on any run (the forecast says which). A generation's calls are
the accounting rows of its conversation with a stage's purpose made while it ran (its own
rubric's scoring, by the judge model, while that score ran): the rows name a conversation, not
the generation, so two lab jobs working on one conversation at once would be counted together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Q
from django.utils import timezone

from benchmark.models import ModelCall, Run
from jobs.models import ReplayRequest
from llm.engine.forecast import Forecast, RoleDemand, UnitUsage, forecast
from llm.services.prices import catalog_in_force
from rubric_lab.engine.pipeline import DIRECT_STAGES, MODEL_STAGES, PURPOSES, stages_of
from rubric_lab.models import GenerationJob, GenerationStatus, InstanceScore
from rubric_lab.services.generation_batches import KIND as GENERATION_KIND
from rubric_lab.services.instance_scoring import JUDGE_PURPOSE

NO_SOURCE = (
    "No earlier generation job of this method to forecast from: generate rubrics for a few "
    "conversations first (a small pilot), then come back."
)
_TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")
# Enough earlier generations for the mean and spread of a stage; more only slow the page down.
MAX_UNITS = 200
SKIPS = {stage: f"skip_{stage}" for stage in ("routing", "intent", "facts", "audit")}


def generation_forecast(
    *,
    run: Run,
    conversations: int,
    generator_model: str,
    judge_model: str = "",
    method: str = "pipeline",
    batch: bool = False,
    **skips: bool,
) -> Forecast:
    """The forecast of `pipeline.generation_job_launch` over `conversations` conversations of
    `run`: one role per model stage the method runs (less the ablated ones), and the judge's
    scoring of each new rubric when a judge model is given. `skips`: skip_routing etc.;
    `batch`: every call at its model's batch price (a job in batch mode)."""
    demands, note = generation_demands(
        run=run,
        conversations=conversations,
        generator_model=generator_model,
        judge_model=judge_model,
        method=method,
        **skips,
    )
    result = forecast(demands, catalog_in_force().price_for, batch=batch)
    result.source = note + (", in batches (batch price)" if batch else "")
    return result


def generation_demands(
    *,
    run: Run,
    conversations: int,
    generator_model: str,
    judge_model: str = "",
    method: str = "pipeline",
    **skips: bool,
) -> tuple[list[RoleDemand], str]:
    """generation_forecast's roles before the arithmetic, and which earlier job they come
    from (an ablation adds those of each of its variants together)."""
    source, note = generation_source(run, method)
    observed = _stage_units(source) if source else {}
    stages = [
        stage
        for stage in stages_of(method)
        if stage in (*MODEL_STAGES, *DIRECT_STAGES) and not skips.get(SKIPS.get(stage, ""))
    ]
    roles = [(f"stage: {stage}", PURPOSES[stage], generator_model) for stage in stages]
    if judge_model:
        roles.append(("stage: scoring", JUDGE_PURPOSE, judge_model))
    where = f"{len(observed)} generations of job {source.pk}" if source else ""
    # A stage the earlier job skipped (an ablation) or a scoring it never ran was not
    # observed, rather than observed to cost nothing.
    unseen = {PURPOSES[stage] for stage, flag in SKIPS.items() if getattr(source, flag, False)}
    if source is not None and not source.judge_model:
        unseen.add(JUDGE_PURPOSE)
    demands = [
        RoleDemand(
            role,
            model,
            conversations,
            [] if purpose in unseen else _of_purpose(observed, purpose),
            where,
        )
        for role, purpose, model in roles
    ]
    return demands, note


def generation_source(run: Run, method: str) -> tuple[GenerationJob | None, str]:
    """The earlier generation job to learn from and a sentence saying which."""
    finished = GenerationJob.objects.filter(
        method=method, generations__status=GenerationStatus.FINISHED
    ).distinct()
    for found, where in (
        (finished.filter(run=run), "on the same run"),
        (finished, "on another run: its conversations may differ in length"),
    ):
        job = found.order_by("-pk").first()
        if job is not None:
            return job, f"generation job {job.pk} {job.name!r} {where}"
    return None, NO_SOURCE


def _stage_units(job: GenerationJob) -> dict[int, dict[str, UnitUsage]]:
    """Each finished generation of `job` (by its conversation): what its calls of each stage
    purpose used (a stage it never called is absent: it counts as zero)."""
    generations = job.generations.filter(status=GenerationStatus.FINISHED)[:MAX_UNITS]
    windows = [
        (g.conversation_id, g.started_at, g.finished_at or timezone.now(), _stage_purposes())
        for g in generations
        if g.started_at
    ]
    scores = InstanceScore.objects.filter(
        rubric__generation__in=[g.pk for g in generations], judge_model=job.judge_model
    ).values_list("conversation_id", "created_at", "finished_at")
    windows += [
        (conversation, started, ended or timezone.now(), [JUDGE_PURPOSE])
        for conversation, started, ended in scores
        if job.judge_model
    ]
    units: dict[int, dict[str, UnitUsage]] = defaultdict(dict)
    for row in _calls_in(windows, _batch_answer_keys(job, generations)):
        units[row["conversation_id"]][row["purpose"]] = _added(
            units[row["conversation_id"]].get(row["purpose"]), row
        )
    for conversation, *_ in windows:
        units.setdefault(conversation, {})
    return dict(units)


def _of_purpose(observed: dict[int, dict[str, UnitUsage]], purpose: str) -> list[UnitUsage]:
    return [units.get(purpose, UnitUsage()) for units in observed.values()]


def _stage_purposes() -> list[str]:
    return [PURPOSES[stage] for stage in (*MODEL_STAGES, *DIRECT_STAGES)]


def _batch_answer_keys(job: GenerationJob, generations) -> list[str]:
    """The accounting keys of the answers a batch job's generations were paid for. They are
    accounted as their batches end, before the replay that runs a generation to its end (and
    sets its started_at), which reads them back under the same keys and writes no row of its
    own for them (jobs.services.replay_batches); answers recorded before the keys were kept
    left that replay's own rows, inside the window, instead."""
    if not job.batch:
        return []
    answered = ReplayRequest.objects.filter(
        job_kind=GENERATION_KIND, job_id=job.pk, unit_id__in=[g.pk for g in generations]
    )
    return list(answered.exclude(answer_key="").values_list("answer_key", flat=True))


def _calls_in(windows: list[tuple], answer_keys: list[str]) -> Iterable[dict]:
    if not windows:
        return []
    match = Q(answer_key__in=answer_keys) if answer_keys else Q()
    for conversation, started, ended, purposes in windows:
        match |= Q(
            conversation_id=conversation,
            purpose__in=purposes,
            created_at__gte=started,
            created_at__lte=ended,
        )
    return ModelCall.objects.filter(match).values("conversation_id", "purpose", *_TOKENS)


def _added(unit: UnitUsage | None, row: dict) -> UnitUsage:
    unit = unit or UnitUsage()
    return UnitUsage(
        calls=unit.calls + 1,
        **{name: getattr(unit, name) + (row[name] or 0) for name in _TOKENS},
    )
