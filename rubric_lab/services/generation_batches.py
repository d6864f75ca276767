"""Rubric generation in batch mode: a job's pipeline calls go through the providers' batch
APIs (about half the price, answers within 24 hours) instead of live calls.

A generation makes several calls, each built on the answers before it, so it is batched by
cache replay (jobs.services.replay_batches): each look of the job's poll replays every
pending generation's live code (pipeline.generation_execute) with a client that answers from
the response cache and stops at the first call it cannot answer; those calls go out in
batches, and the next look replays one call further. A generation whose replay ends is stored
by the live code, stages, rubric and all. Each batch answer is accounted once, at the batch
price, on the conversation's model calls and the generation's cost; the replay's cached read
of it counts its call and tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from django.utils import timezone

from benchmark.models import ModelCall
from jobs.models import JobStatus
from jobs.services import accounting, batches, replay_batches
from jobs.services.leases import LeasedTask, lease_release_fields
from llm.engine.chat import ChatResponse
from rubric_lab.models import GenerationJob, GenerationStatus, RubricGeneration
from rubric_lab.services import budgets, pipeline

KIND = "rubric_generation"  # the job kind rubric_lab.tasks.generation declares


def generation_job_dispatch(job: GenerationJob, send: Callable[[list[LeasedTask]], None]) -> None:
    """The dispatch of every generation job: a batch job's poll, or the live window."""
    if job.batch:
        generation_batch_poll(job)
    else:
        pipeline.generation_dispatch(job, send)


def generation_batch_poll(job: GenerationJob) -> None:
    """Record what the job's batches answered, replay its generations, send what they miss,
    and finish the job once none is pending. Does nothing while another poller holds it."""
    if replay_batches.replay_batch_poll(_work(job)):
        pipeline.job_finish_if_done(job)


def batch_progress(job: GenerationJob) -> list[dict]:
    """The job's batches, for its page and the API."""
    return batches.batch_rows(KIND, job.pk)


def page_context(job: GenerationJob) -> dict:
    """The job page's batch table and how many of its calls wait for a batch."""
    return {
        "batches": batch_progress(job),
        "batch_poll_seconds": round(batches.poll_seconds()),
        "replay": replay_batches.waiting_counts(KIND, job.pk),
    }


def _work(job: GenerationJob) -> replay_batches.ReplayWork:
    return replay_batches.ReplayWork(
        kind=KIND,
        job=job,
        ready=partial(_ready, job),
        replay=_replay,
        answer_record=_answer_record,
        unit_failed=_failed,
        limit_reached=partial(budgets.limit_reached, job),
        running=lambda: GenerationJob.objects.filter(pk=job.pk, status=JobStatus.RUNNING).exists(),
        use_cache=job.use_cache,
    )


def _ready(job: GenerationJob, waiting: set[int]) -> Iterator[int]:
    pending = job.generations.filter(status=GenerationStatus.PENDING).exclude(pk__in=waiting)
    yield from pending.order_by("pk").values_list("pk", flat=True)


def _replay(generation_id: int, client: replay_batches.ReplayClient) -> None:
    try:
        pipeline.generation_execute(generation_id, client=client)
    except replay_batches.ReplayMiss:
        # Waits for its call: free for the next replay (current_stage says how far it got).
        RubricGeneration.objects.filter(pk=generation_id).update(**lease_release_fields())
        raise


def _answer_record(generation_id: int, purpose: str, response: ChatResponse, key: str) -> None:
    generation = RubricGeneration.objects.select_related("conversation").get(pk=generation_id)
    conversation = generation.conversation
    owner = partial(ModelCall, run_id=conversation.run_id, conversation=conversation)
    if accounting.answer_record(owner, purpose, response, key):
        accounting.price_added(RubricGeneration, generation_id, response)


def _failed(generation_id: int, reason: str) -> None:
    row = RubricGeneration.objects.filter(pk=generation_id, status=GenerationStatus.PENDING)
    stage = row.values_list("current_stage", flat=True).first() or ""
    updated = row.update(
        status=GenerationStatus.FAILED,
        failed_stage=stage,
        failure_reason=reason[:2000],
        current_stage="",
        finished_at=timezone.now(),
        **lease_release_fields(),
    )
    if updated:
        job = GenerationJob.objects.get(generations__pk=generation_id)
        pipeline.job_finish_if_done(job)
