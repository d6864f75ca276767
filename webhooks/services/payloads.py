"""What a delivery says about a job: its kind, id, status, unit counts by status, what it cost
and a link to its page. Nothing else: no names, failure texts, model strings or scores (a
hook belongs to a researcher, but an archive job concerns a blinded study, and a receiver may
forward what it gets), so a body carries no clinician identity and no free text."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db.models import Count, QuerySet
from django.urls import reverse

from benchmark.services.cases import benchmark_set_spent
from benchmark.services.runs import run_spent
from fidelity.services.reviews import review_spent
from jobs.tasks import JOB_MODELS
from jury.services.scoring import scoring_spent
from rubric_lab.services.budgets import job_spent


@dataclass(frozen=True)
class JobKind:
    """How to describe one kind of job: its page, its units, what it spent."""

    page: str  # the URL name of its page, taking its pk
    units: Callable[[Any], QuerySet] | None = None  # rows with a `status`, counted by it
    spent: Callable[[Any], Decimal] | None = None


KINDS: dict[str, JobKind] = {
    "benchmark.run": JobKind("benchmark:run", lambda run: run.conversations.all(), run_spent),
    "benchmark.benchmarkset": JobKind(
        "benchmark:set", lambda case_set: case_set.entries.all(), benchmark_set_spent
    ),
    "jury.scoringjob": JobKind("jury:job", lambda job: job.scores.all(), scoring_spent),
    "fidelity.fidelityreview": JobKind(
        "fidelity:review", lambda review: review.conversation_reviews.all(), review_spent
    ),
    "rubric_lab.generationjob": JobKind(
        "rubric_lab:pipeline", lambda job: job.generations.all(), job_spent
    ),
    "rubric_lab.sensitivitystudy": JobKind(
        "rubric_lab:sensitivity", lambda study: study.pairs.all(), job_spent
    ),
    "rubric_lab.coveragerun": JobKind(
        "rubric_lab:coverage", lambda coverage: coverage.cases.all(), job_spent
    ),
    "rubric_lab.refinestudy": JobKind(
        "rubric_lab:refine", lambda study: study.refinements.all(), job_spent
    ),
    "rubric_lab.ablationstudy": JobKind("rubric_lab:ablation", None, job_spent),
    "alignment.archivejob": JobKind("alignment:archive_job"),
}


def job_description(kind: str, job_id: int, status: str) -> dict:
    """The `job` object of a job event; a job deleted since it ended keeps its id and status."""
    described: dict[str, Any] = {"kind": kind, "id": job_id, "status": status}
    how = KINDS.get(kind)
    job = _job_of(kind, job_id)
    if how is None or job is None:
        return described | {"counts": {}, "cost_usd": None, "url": None}
    return described | {
        "counts": _counts(how, job),
        "cost_usd": _cost(how, job),
        "url": settings.SITE_URL + reverse(how.page, args=[job_id]),
    }


def batch_job_kind(batch) -> str:
    """The table of a batch's job ("jury.scoringjob"), as job events name it; a batch names
    its job by the watch's kind ("scoring")."""
    model = JOB_MODELS.get(batch.job_kind)
    return model._meta.label_lower if model else batch.job_kind


def batch_facts(batch) -> dict:
    """The `batch` object of a batch.ended event: its job, the provider (never the model:
    a judge's model is a score's author), the provider's batch id, how it ended and its
    requests by outcome."""
    kind = batch_job_kind(batch)
    how = KINDS.get(kind)
    url = settings.SITE_URL + reverse(how.page, args=[batch.job_id]) if how else None
    return {
        "batch": {
            "job": {"kind": kind, "id": batch.job_id, "url": url},
            "provider": batch.provider,
            "batch_id": batch.batch_id,
            "state": batch.detail or "ended",
            "counts": dict(batch.counts),
            "requests": len(batch.requests),
            "ended_at": batch.ended_at.isoformat() if batch.ended_at else None,
        }
    }


def event_body(*, event: str, event_id: str, created_at: str, **fields) -> str:
    """The JSON text sent (compact, keys sorted: the same event always gives the same bytes)."""
    body = {"event": event, "id": event_id, "created_at": created_at, **fields}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _job_of(kind: str, job_id: int):
    try:
        model = apps.get_model(kind)
    except (LookupError, ValueError):
        return None
    return model.objects.filter(pk=job_id).first()


def _counts(how: JobKind, job) -> dict[str, int]:
    if job._meta.label_lower == "alignment.archivejob":
        return {"done": job.done, "total": job.total}  # an archive counts its steps
    if how.units is None:
        return {}
    rows = how.units(job).order_by().values_list("status").annotate(n=Count("pk"))
    return {status: n for status, n in rows}


def _cost(how: JobKind, job) -> float | None:
    if how.spent is None:
        return None
    return round(float(how.spent(job)), 6)
