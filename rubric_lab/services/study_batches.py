"""The lab's evaluation studies in batch mode: a study's calls go through the providers' batch
APIs (about half the price, answers within 24 hours) instead of live calls.

A unit of a study (a near-miss pair) makes calls that depend on each other (the copy, then
the judge's reading of both traces), so it is batched by cache replay, like a rubric
generation (jobs.services.replay_batches): each look of the study's poll replays every pending
unit's live code with a client answering from the unit's recorded batch answers and stops it
at the first call it cannot answer; those calls go out in batches, and the next look replays
one call further. A unit whose replay ends is stored by the live code (evaluation_work), its
calls read back as cached ones: their calls and tokens are counted then, and each answer's
batch price is added to the unit once, as its result is recorded (keyed on the unit).

Everything here is shared by the kinds of study: each declares its `StudyBatchKind`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import models
from django.utils import timezone

from jobs.models import JobStatus, ReplayState
from jobs.services import accounting, batches, replay_batches
from jobs.services.leases import lease_release_fields
from llm.engine.chat import ChatResponse
from llm.engine.providers.client import batch_capable
from rubric_lab.services import budgets
from rubric_lab.services import evaluation_work as work


@dataclass(frozen=True)
class StudyBatchKind:
    """What one kind of study supplies to be run in batch mode."""

    kind: str  # its job kind, as rubric_lab.tasks.evaluation declares it
    job_model: type[models.Model]
    unit_model: type[models.Model]
    units_of: Callable[[Any], models.QuerySet]  # the study's units
    # Runs one unit's live code: execute(pk, token, client=...) (a ReplayMiss passes through).
    execute: Callable[..., bool]
    # The failure stage of a unit whose request (of this purpose) got no answer.
    stage_of: Callable[[str], str]


def models_check(models_called: list[str], refusal: type[Exception]) -> None:
    """Refuse, with `refusal`, a batch launch naming a model that has no batch API."""
    for model in models_called:
        if model and not batch_capable(model):
            raise refusal(
                f"{model} has no batch API: batch mode takes openai/, anthropic/ or offline/ "
                "models."
            )


def batch_poll(kind: StudyBatchKind, job) -> None:
    """Record what the study's batches answered, replay its units, send what they miss, and
    finish the study once none is pending. Does nothing while another poller holds it."""
    if replay_batches.replay_batch_poll(_work(kind, job)):
        work.job_finish_if_done(kind.job_model, job, kind.units_of)


def batch_progress(kind: StudyBatchKind, job) -> list[dict]:
    """The study's batches, for its page and the API."""
    return batches.batch_rows(kind.kind, job.pk)


def page_context(kind: StudyBatchKind, job) -> dict:
    """The study page's batch table and how many of its calls wait for a batch."""
    return {
        "batches": batch_progress(kind, job),
        "batch_poll_seconds": round(batches.poll_seconds()),
        "replay": replay_batches.waiting_counts(kind.kind, job.pk),
    }


def _work(kind: StudyBatchKind, job) -> replay_batches.ReplayWork:
    running = kind.job_model.objects.filter(pk=job.pk, status=JobStatus.RUNNING)
    return replay_batches.ReplayWork(
        kind=kind.kind,
        job=job,
        ready=partial(_ready, kind, job),
        replay=partial(_replay, kind),
        answer_record=partial(_answer_record, kind.unit_model),
        unit_failed=partial(_failed, kind, job),
        limit_reached=partial(budgets.limit_reached, job),
        running=running.exists,
        use_cache=job.use_cache,
    )


def _ready(kind: StudyBatchKind, job, waiting: set[int]) -> Iterator[int]:
    pending = kind.units_of(job).filter(status=work.PENDING).exclude(pk__in=waiting)
    yield from pending.order_by("pk").values_list("pk", flat=True)


def _replay(kind: StudyBatchKind, unit_id: int, client: replay_batches.ReplayClient) -> None:
    try:
        kind.execute(unit_id, None, client=client)
    except replay_batches.ReplayMiss:
        # Waits for its call: free for the next replay, which starts the unit again.
        kind.unit_model.objects.filter(pk=unit_id).update(**lease_release_fields())
        raise


def _answer_record(
    unit_model: type[models.Model], unit_id: int, purpose: str, response: ChatResponse, key: str
) -> None:
    """The answer's price on its unit, once per key (called inside the transaction that
    records the answer; a study's units keep no accounting row per call)."""
    row = unit_model.objects.select_for_update().only("pk", "paid_answer_keys").get(pk=unit_id)
    if key in row.paid_answer_keys:
        return
    unit_model.objects.filter(pk=unit_id).update(paid_answer_keys=[*row.paid_answer_keys, key])
    accounting.price_added(unit_model, unit_id, response)


def _failed(kind: StudyBatchKind, job, unit_id: int, reason: str) -> None:
    """A unit whose request got no answer fails at the stage of that request."""
    requests = replay_batches.job_requests(kind.kind, job.pk).filter(unit_id=unit_id)
    request = requests.filter(state=ReplayState.FAILED).order_by("-pk").first()
    stage = kind.stage_of(request.request.get("purpose", "")) if request else ""
    updated = kind.unit_model.objects.filter(pk=unit_id, status=work.PENDING).update(
        status=work.FAILED,
        failure_stage=stage,
        failure_reason=reason[:2000],
        finished_at=timezone.now(),
        **lease_release_fields(),
    )
    if updated:
        work.job_finish_if_done(kind.job_model, job, kind.units_of)
