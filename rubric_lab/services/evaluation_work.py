"""Leased units of work shared by every evaluation study of the lab (near-miss pairs, coverage
cases, refinements): dispatch a window, claim with a token, record the outcome, finish the job.

A unit's `perform(row, client)` returns the fields to store; a provider fault, an answer that
stayed invalid after repair, or a bug ends the unit as failed with its reason (never pending
forever, never half stored). Tokens and cost of every call made count, whatever the outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import models, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

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
from llm.engine.providers.redaction import failure_text
from llm.engine.structured import StructuredFailure
from rubric_lab.services import budgets

logger = logging.getLogger(__name__)
PENDING = "pending"
FAILED = "failed"


class StageFailure(Exception):
    """A unit failed at a named stage; `fields` are stored with it (e.g. the raw answer)."""

    def __init__(self, stage: str, reason: str, **fields: Any):
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.fields = fields


def stage(name: str, call: Callable[[], Any]) -> Any:
    """Run one model step; an unusable answer or a provider fault becomes a StageFailure."""
    try:
        return call()
    except StructuredFailure as failure:
        raw = failure.responses[-1].text if failure.responses else ""
        raise StageFailure(name, failure.reason, raw_output=raw) from failure
    except ProviderError as error:
        raise StageFailure(name, failure_text(error)) from error


def work_execute(
    model: type[models.Model],
    pk: int,
    token: str | None,
    perform: Callable[[Any, Any], dict[str, Any]],
    *,
    use_cache: Callable[[Any], bool],
    client=None,
) -> bool:
    """Claim pending row `pk` of `model` with the message's token, perform it and store the
    outcome; returns whether it ran here. `client` replaces the provider router (a batch
    job's replay, whose ReplayMiss passes through and stores nothing)."""
    rows = model.objects.filter(pk=pk, status=PENDING)
    mine = lease_claim(rows, token)
    if mine is None:
        return False
    row = model.objects.get(pk=pk)
    recorder = accounting.RecordingClient(
        client or model_router(use_cache(row)), also=accounting.spend_ledger(model, pk)
    )
    with Heartbeat(lease_extender(rows, mine), label=f"{model.__name__} {pk}"):
        try:
            outcome = perform(row, recorder)
        except StageFailure as failure:
            outcome = {
                "status": FAILED,
                "failure_stage": failure.stage,
                "failure_reason": failure.reason,
                **failure.fields,
            }
        except Exception as error:  # a bug must not leave the row pending forever
            logger.exception("%s %s failed", model.__name__, pk)
            outcome = {"status": FAILED, "failure_reason": failure_text(error)}
    _record(model, pk, mine, recorder, outcome)
    return True


def _record(model, pk: int, token: str, recorder, outcome: dict[str, Any]) -> None:
    fields = {
        **outcome,
        "purpose_usage": purpose_usage(recorder.calls),
        "finished_at": timezone.now(),
        **lease_release_fields(),
    }
    with transaction.atomic():
        # The spend of answers not written as they came (cached replays): paid either way.
        accounting.spend_added(model, pk, [(p, r) for p, r, _ in recorder.unwritten])
        # Only the worker holding the lease stores: a duplicate that lost it changes nothing.
        model.objects.filter(pk=pk, lease_token=token, status=PENDING).update(**fields)


USAGE_FIGURES = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


def purpose_usage(calls) -> dict[str, dict[str, int]]:
    """Per purpose of (purpose, response) calls: how many and their tokens, cache replays
    included (a new launch pays for them again), as a later forecast reads them."""
    usage: dict[str, dict[str, int]] = {}
    for purpose, response in calls:
        row = usage.setdefault(purpose, dict.fromkeys(("calls", *USAGE_FIGURES), 0))
        row["calls"] += 1
        for name in USAGE_FIGURES:
            row[name] += getattr(response.usage, name)
    return usage


def work_dispatch(
    job_model: type[models.Model],
    job,
    rows_of: Callable[[Any], models.QuerySet],
    send: Callable[[list[LeasedTask]], None],
) -> list[LeasedTask]:
    """Keep up to the job's concurrency of pending rows with the workers."""
    with transaction.atomic():
        job = job_model.objects.select_for_update().get(pk=job.pk)
        if job.status != JobStatus.RUNNING:
            return []
        pending = rows_of(job).filter(status=PENDING)
        sent = lease_dispatch(
            pending, window=job.concurrency, send=send, stop=lambda: budgets.limit_reached(job)
        )
    job_finish_if_done(job_model, job, rows_of)
    return sent


def job_finish_if_done(job_model, job, rows_of: Callable[[Any], models.QuerySet]) -> None:
    """Once nothing is pending: finished, or failed with the commonest reason when every unit
    failed (a job with nothing usable has nothing to report)."""
    rows = rows_of(job)

    def failure() -> str:
        if not rows.exists() or rows.exclude(status=FAILED).exists():
            return ""
        common = rows.values_list("failure_reason").annotate(n=Count("id")).order_by("-n").first()
        return f"All {rows.count()} units failed; commonest reason: {common[0]}"

    finish.job_finish_if_done(job, pending=rows.filter(status=PENDING), failure=failure)


def work_relaunch(job_model, job, rows_of: Callable[[Any], models.QuerySet]) -> None:
    """Failed units go back to pending (their failure cleared) and the job runs again; units
    with an outcome are kept."""
    rows_of(job).filter(status=FAILED).update(
        status=PENDING, failure_reason="", failure_stage="", **lease_release_fields()
    )
    job_model.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, finished_at=None, failure_reason="", stop_reason=""
    )
    job_finish_if_done(job_model, job, rows_of)


def running_ids(job_model) -> list[int]:
    return list(job_model.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


@dataclass(frozen=True)
class Counts:
    """A job's units by status."""

    total: int
    pending: int
    counts: dict[str, int]

    @property
    def done(self) -> int:
        return self.total - self.pending

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


@dataclass(frozen=True)
class Progress(Counts):
    input_tokens: int
    output_tokens: int
    cost: Decimal | None


def progress(rows: models.QuerySet) -> Progress:
    summary = rows.aggregate(
        total=Count("id"),
        input_tokens=Sum("input_tokens"),
        output_tokens=Sum("output_tokens"),
        cost=Sum("cost_usd"),
        unknown=Count("id", filter=Q(cost_known=False)),
    )
    counts = dict(rows.values_list("status").annotate(n=Count("id")))
    return Progress(
        total=summary["total"],
        pending=counts.get(PENDING, 0),
        counts=counts,
        input_tokens=summary["input_tokens"] or 0,
        output_tokens=summary["output_tokens"] or 0,
        cost=None if summary["unknown"] else (summary["cost"] or Decimal(0)),
    )


def jobs_counts(rows: models.QuerySet, job_field: str, job_ids: list[int]) -> dict[int, Counts]:
    """The units by status of each of several jobs in one query (a list's page of jobs);
    `job_field` is the units' link to their job."""
    by_job: dict[int, dict[str, int]] = {job_id: {} for job_id in job_ids}
    found = (
        rows.filter(**{f"{job_field}__in": job_ids})
        .values_list(job_field, "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for job_id, status, number in found:
        by_job[job_id][status] = number
    return {
        job_id: Counts(total=sum(counts.values()), pending=counts.get(PENDING, 0), counts=counts)
        for job_id, counts in by_job.items()
    }
