"""Launching and executing the rubric pipeline: one leased task per (job, conversation).

Launching checks the options and creates one pending RubricGeneration per conversation.
Executing one runs the five stages (rubric_lab.engine.pipeline) through the provider layer,
storing each stage's prompt, input, output, tokens, cost and time as it finishes, so the page
shows progress stage by stage. A generation ends finished with its InstanceRubric - written
with all its criteria in one transaction - or failed with the stage and the reason; never
with half a rubric. A generation whose worker died is sent again by the job's watch and starts
over (its partial stages are cleared first).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from decimal import Decimal
from functools import partial

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from benchmark.models import Conversation, ModelCall, Run
from jobs.models import JobStatus
from jobs.services import accounting, finish
from jobs.services.leases import (
    Heartbeat,
    LeasedTask,
    lease_claim,
    lease_dispatch,
    lease_extender,
    lease_release_fields,
)
from llm.clients import model_router
from llm.engine.chat import ProviderError
from llm.engine.providers.client import batch_capable
from llm.engine.providers.model_strings import check_model_string
from llm.engine.providers.redaction import failure_text
from rubric_lab.engine.pipeline import (
    MAX_AUDIT_ROUNDS,
    METHODS,
    Case,
    PipelineOptions,
    Sampling,
    StageRecord,
    run_pipeline,
    stages_of,
)
from rubric_lab.engine.retrieval import RETRIEVERS
from rubric_lab.models import (
    GenerationJob,
    GenerationStatus,
    InstanceRubric,
    PipelineStage,
    RubricCriterion,
    RubricGeneration,
)
from rubric_lab.services import budgets
from rubric_lab.services.knowledge import retriever_for

logger = logging.getLogger(__name__)

MAX_TOP_K = 20
MAX_CONCURRENCY = 64
CASE_SCENARIO_FIELDS = (
    "condition",
    "severity",
    "task_category",
    "task_subcategory",
    "age_group",
    "personality",
)


class PipelineLaunchError(ValueError):
    """The pipeline cannot be launched as asked; the message says why."""


# --- launching --------------------------------------------------------------------------------


@transaction.atomic
def generation_job_launch(
    *,
    conversations: Iterable[Conversation],
    generator_model: str,
    name: str = "",
    judge_model: str = "",
    retriever: str = "bm25",
    top_k: int = 4,
    method: str = "pipeline",
    skip_routing: bool = False,
    skip_intent: bool = False,
    skip_facts: bool = False,
    skip_audit: bool = False,
    audit_rounds: int = 3,
    sampling: dict[str, dict[str, float | None]] | None = None,
    use_cache: bool = True,
    concurrency: int = 8,
    run: Run | None = None,
    cost_limit_usd: Decimal | None = None,
    batch: bool = False,
    batch_resend_live: bool = False,
    user=None,
) -> GenerationJob:
    """A running job with one pending generation per scorable conversation.

    `sampling` maps a model stage to {"temperature": t, "top_p": p} (None or left out: the
    provider's default); the direct method's one stage is "direct". `batch` sends the calls
    through the providers' batch APIs (rubric_lab.services.generation_batches)."""
    ids = list(
        Conversation.objects.scorable()
        .filter(pk__in=[c.pk for c in conversations])
        .values_list("pk", flat=True)
    )
    if not ids:
        raise PipelineLaunchError("Pick at least one finished, scorable conversation.")
    _check_options(generator_model, judge_model, retriever, top_k, concurrency)
    sampling = sampling_check(method, sampling or {})
    if method == "direct" and any((skip_routing, skip_intent, skip_facts, skip_audit)):
        raise PipelineLaunchError("Direct generation has no stages to leave out.")
    if not 1 <= audit_rounds <= MAX_AUDIT_ROUNDS:
        raise PipelineLaunchError(f"Audit rounds must lie between 1 and {MAX_AUDIT_ROUNDS}.")
    if batch:
        _check_batch(generator_model, judge_model)
    ablations = [
        flag
        for flag, on in (
            ("no routing", skip_routing),
            ("no intent", skip_intent),
            ("no facts", skip_facts),
            ("no audit", skip_audit),
        )
        if on
    ] + (["direct"] if method == "direct" else [])
    job = GenerationJob(
        name=name.strip() or _default_name(generator_model, ablations),
        run=run,
        generator_model=generator_model,
        judge_model=judge_model,
        retriever=retriever,
        top_k=top_k,
        method=method,
        skip_routing=skip_routing,
        skip_intent=skip_intent,
        skip_facts=skip_facts,
        skip_audit=skip_audit,
        audit_rounds=audit_rounds,
        sampling=sampling,
        use_cache=use_cache,
        concurrency=concurrency,
        cost_limit_usd=cost_limit_usd,
        batch=batch,
        batch_resend_live=batch and batch_resend_live,
        status=JobStatus.RUNNING,
        created_by=user,
    )
    if refusal := budgets.launch_refusal(job):
        raise PipelineLaunchError(refusal)
    job.save()
    RubricGeneration.objects.bulk_create(
        RubricGeneration(job=job, conversation_id=pk) for pk in ids
    )
    return job


def _default_name(generator_model: str, ablations: list[str]) -> str:
    suffix = f" ({', '.join(ablations)})" if ablations else ""
    return f"{generator_model} rubrics{suffix}"


def sampling_check(method: str, sampling: dict) -> dict[str, dict[str, float | None]]:
    """The per-stage sampling as stored: only the method's model stages, temperature in
    [0, 2] and top-p in (0, 1], unset values dropped; PipelineLaunchError names a bad one."""
    if method not in METHODS:
        raise PipelineLaunchError(f"Method must be one of {', '.join(METHODS)}.")
    model_stages = [s for s in stages_of(method) if s != "retrieval"]
    unknown = sorted(set(sampling) - set(model_stages))
    if unknown:
        raise PipelineLaunchError(
            f"No model stage named {', '.join(unknown)}; sampling applies to "
            f"{', '.join(model_stages)}."
        )
    checked = {}
    for stage, values in sampling.items():
        temperature, top_p = values.get("temperature"), values.get("top_p")
        if temperature is not None and not 0 <= temperature <= 2:
            raise PipelineLaunchError(f"{stage}: temperature must lie between 0 and 2.")
        if top_p is not None and not 0 < top_p <= 1:
            raise PipelineLaunchError(f"{stage}: top-p must lie above 0 and at most 1.")
        kept = {
            key: value
            for key, value in (("temperature", temperature), ("top_p", top_p))
            if value is not None
        }
        if kept:
            checked[stage] = kept
    return checked


def job_sampling(job: GenerationJob) -> dict[str, Sampling]:
    return {stage: Sampling(**values) for stage, values in job.sampling.items()}


def _check_options(generator: str, judge: str, retriever: str, top_k: int, concurrency: int):
    try:
        check_model_string(generator, purpose="rubric_synthesis")
        if judge:
            check_model_string(judge, purpose="rubric_judge")
    except ProviderError as error:
        raise PipelineLaunchError(str(error)) from None
    if retriever not in RETRIEVERS:
        raise PipelineLaunchError(f"Retriever must be one of {', '.join(RETRIEVERS)}.")
    if not 1 <= top_k <= MAX_TOP_K:
        raise PipelineLaunchError(f"Passages per query must lie between 1 and {MAX_TOP_K}.")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise PipelineLaunchError(f"Concurrency must lie between 1 and {MAX_CONCURRENCY}.")


def _check_batch(generator: str, judge: str) -> None:
    """Batch mode needs a model with a batch API, and no judge: the rubric's own score is
    called as the generation ends, outside the batches."""
    if not batch_capable(generator):
        raise PipelineLaunchError(
            f"{generator} has no batch API: batch mode takes openai/, anthropic/ or offline/ "
            "models."
        )
    if judge:
        raise PipelineLaunchError(
            "Batch mode does not score the rubrics as they are made: leave the judge blank "
            "and score them afterwards."
        )


def generation_dispatch(
    job: GenerationJob, send: Callable[[list[LeasedTask]], None]
) -> list[LeasedTask]:
    """Keep up to the job's concurrency of generations with the workers; a generation whose
    worker died is sent again once its lease runs out."""
    with transaction.atomic():
        job = GenerationJob.objects.select_for_update().get(pk=job.pk)
        if job.status != JobStatus.RUNNING:
            return []
        sent = lease_dispatch(
            job.generations.filter(status=GenerationStatus.PENDING),
            window=job.concurrency,
            send=send,
            stop=lambda: budgets.limit_reached(job),
        )
    job_finish_if_done(job)
    return sent


def job_finish_if_done(job: GenerationJob) -> None:
    def failure() -> str:
        produced = job.generations.filter(status=GenerationStatus.FINISHED).exists()
        return "" if produced else "no generation produced a rubric"

    pending = job.generations.filter(status=GenerationStatus.PENDING)
    finish.job_finish_if_done(job, pending=pending, failure=failure)


def job_id_of(generation_id: int) -> int | None:
    return (
        RubricGeneration.objects.filter(pk=generation_id).values_list("job_id", flat=True).first()
    )


def running_job_ids() -> list[int]:
    return list(GenerationJob.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


PROGRESS_COUNTS = {
    "total": Count("generations"),
    "finished": Count("generations", filter=Q(generations__status=GenerationStatus.FINISHED)),
    "failed": Count("generations", filter=Q(generations__status=GenerationStatus.FAILED)),
}


def job_progress(job: GenerationJob) -> dict:
    return _progress(GenerationJob.objects.filter(pk=job.pk).aggregate(**PROGRESS_COUNTS))


def jobs_with_progress(limit: int) -> list[tuple[GenerationJob, dict]]:
    """The latest jobs, each with its progress counts, in one query."""
    jobs = GenerationJob.objects.select_related("run").annotate(**PROGRESS_COUNTS)[:limit]
    return [(job, _progress({key: getattr(job, key) for key in PROGRESS_COUNTS})) for job in jobs]


def jobs_progress(jobs: list[GenerationJob]) -> dict[int, dict]:
    """Each job's progress counts, for a page of jobs in one query."""
    found = (
        GenerationJob.objects.filter(pk__in=[job.pk for job in jobs])
        .annotate(**PROGRESS_COUNTS)
        .values("pk", *PROGRESS_COUNTS)
    )
    return {row.pop("pk"): _progress(row) for row in found}


def _progress(counts: dict) -> dict:
    counts["done"] = counts["finished"] + counts["failed"]
    counts["percent"] = round(100 * counts["done"] / counts["total"]) if counts["total"] else 0
    return counts


# --- executing one generation ----------------------------------------------------------------


def case_of(conversation: Conversation) -> Case:
    """The case as the pipeline sees it: clinical record, scenario and the patient's words."""
    entry = conversation.entry
    scenario = {name: getattr(entry, name) for name in CASE_SCENARIO_FIELDS}
    scenario.update(complexity=entry.complexity, story=entry.story)
    said = conversation.events.filter(kind="patient_message").exclude(content="")
    return Case(
        key=str(conversation.public_id),
        profile=entry.profile or {},
        scenario=scenario,
        patient_messages=tuple(said.order_by("seq").values_list("content", flat=True)),
    )


def generation_execute(generation_id: int, token: str | None = None, *, client=None) -> bool:
    """Run the pipeline for one pending generation if this message may take it (see
    jobs.services.leases); returns whether it ran. `client` replaces the provider
    router (tests)."""
    row = RubricGeneration.objects.filter(pk=generation_id, status=GenerationStatus.PENDING)
    mine = lease_claim(row, token)
    if mine is None:
        return False
    with Heartbeat(lease_extender(row, mine), label=f"rubric generation {generation_id}"):
        _generate(RubricGeneration.objects.select_related("job").get(pk=generation_id), client)
    return True


def _generate(generation: RubricGeneration, client) -> None:
    job = generation.job
    generation.stages.all().delete()  # a previous attempt's worker died mid-way
    RubricGeneration.objects.filter(pk=generation.pk).update(
        started_at=timezone.now(), current_stage=stages_of(job.method)[0]
    )
    conversation = Conversation.objects.select_related("entry", "run").get(
        pk=generation.conversation_id
    )
    recorder = accounting.RecordingClient(
        client or model_router(job.use_cache),
        owner=partial(ModelCall, run=conversation.run, conversation=conversation),
        also=accounting.spend_ledger(RubricGeneration, generation.pk),
    )
    options = PipelineOptions(
        model=job.generator_model,
        top_k=job.top_k,
        method=job.method,
        skip_routing=job.skip_routing,
        skip_intent=job.skip_intent,
        skip_facts=job.skip_facts,
        skip_audit=job.skip_audit,
        audit_rounds=job.audit_rounds,
        sampling=job_sampling(job),
    )
    started = time.perf_counter()
    try:
        outcome = run_pipeline(
            recorder,
            case_of(conversation),
            retriever_for(job.retriever),
            options,
            on_stage=lambda stage: _stage_save(generation, stage, job.method),
        )
    except Exception as error:  # a bug must not leave the generation pending forever
        logger.exception("rubric generation %s failed", generation.pk)
        current = RubricGeneration.objects.get(pk=generation.pk).current_stage
        _finish(
            generation,
            recorder,
            conversation,
            started,
            failed_stage=current,
            reason=failure_text(error),
        )
        return
    if not outcome.ok:
        _finish(
            generation,
            recorder,
            conversation,
            started,
            failed_stage=outcome.failed_stage,
            reason=outcome.failure_reason,
        )
        return
    with transaction.atomic():
        rubric = InstanceRubric.objects.create(
            generation=generation,
            conversation=conversation,
            facts=outcome.facts,
            passages=[_cited(p) for p in outcome.passages],
        )
        RubricCriterion.objects.bulk_create(
            RubricCriterion(
                rubric=rubric,
                index=index,
                text=c.text,
                axis=c.axis,
                weight=c.weight,
                fact_ids=list(c.fact_ids),
                passage_ids=list(c.passage_ids),
                intent_basis=list(c.intent_basis),
            )
            for index, c in enumerate(outcome.criteria)
        )
        _finish(generation, recorder, conversation, started)
    if job.judge_model:
        from rubric_lab.services.instance_scoring import instance_score_run_here

        instance_score_run_here(rubric=rubric, conversation=conversation, judge=job.judge_model)


def _stage_save(generation: RubricGeneration, stage: StageRecord, method: str) -> None:
    sums = accounting.totals(stage.responses)
    stages = stages_of(method)
    PipelineStage.objects.create(
        generation=generation,
        name=stage.name,
        order=stages.index(stage.name),
        status=stage.status,
        model=stage.model,
        system_prompt=stage.system,
        user_prompt=stage.user,
        input=stage.input,
        output=stage.output,
        attempts=[{"text": r.text, "cached": r.cached} for r in stage.responses],
        error=stage.error,
        input_tokens=sums["input_tokens"],
        output_tokens=sums["output_tokens"],
        cost_usd=sums["cost_usd"] if stage.responses else None,
        cost_known=sums["cost_usd"] is not None,
        cached=bool(stage.responses) and all(r.cached for r in stage.responses),
        elapsed_ms=stage.elapsed_ms,
        temperature=stage.sampling.temperature,
        top_p=stage.sampling.top_p,
    )
    following = stages[stages.index(stage.name) + 1 :]
    RubricGeneration.objects.filter(pk=generation.pk).update(
        current_stage=following[0] if following else ""
    )


def _finish(generation, recorder, conversation, started, *, failed_stage="", reason="") -> None:
    accounting.unwritten_save(recorder)
    unwritten = [(purpose, response) for purpose, response, _ in recorder.unwritten]
    accounting.spend_added(RubricGeneration, generation.pk, unwritten)  # the rest as they came
    RubricGeneration.objects.filter(pk=generation.pk).update(
        status=GenerationStatus.FAILED if reason else GenerationStatus.FINISHED,
        failed_stage=failed_stage,
        failure_reason=reason,
        current_stage="",
        elapsed_ms=(time.perf_counter() - started) * 1000,
        finished_at=timezone.now(),
        **lease_release_fields(),
    )
    job_finish_if_done(generation.job)


def _cited(passage: dict) -> dict:
    return {
        key: passage[key] for key in ("passage_id", "title", "source", "source_version", "text")
    }


def generation_total_cost(job: GenerationJob) -> Decimal | None:
    rows = job.generations.exclude(status=GenerationStatus.PENDING)
    if rows.filter(cost_known=False).exists():
        return None
    return sum((row.cost_usd or Decimal(0) for row in rows), Decimal(0))


def rubric_records(job: GenerationJob) -> list[dict]:
    """One record per generation of the job: its status and, once made, the rubric's criteria
    with what they cite."""
    generations = job.generations.select_related("conversation__entry").order_by("pk")
    rubrics = {
        rubric.generation_id: rubric
        for rubric in InstanceRubric.objects.filter(generation__job=job).prefetch_related(
            "criteria"
        )
    }
    records = []
    for generation in generations:
        rubric = rubrics.get(generation.pk)
        criteria = sorted(rubric.criteria.all(), key=lambda c: c.index) if rubric else []
        records.append(
            {
                "job": job.pk,
                "method": job.method,
                "ablations": job.ablations,
                "conversation": str(generation.conversation.public_id),
                "source_id": generation.conversation.entry.seed.get("source_id", ""),
                "status": generation.status,
                "failed_stage": generation.failed_stage,
                "failure_reason": generation.failure_reason,
                "rubric": rubric.pk if rubric else None,
                "criteria": [
                    {
                        "text": c.text,
                        "axis": c.axis,
                        "weight": c.weight,
                        "fact_ids": c.fact_ids,
                        "passage_ids": c.passage_ids,
                        "intent_basis": c.intent_basis,
                    }
                    for c in criteria
                ],
            }
        )
    return records
