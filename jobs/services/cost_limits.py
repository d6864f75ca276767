"""Cost limits, the same for every kind of job (runs, benchmark sets, scoring jobs and every
rubric-lab job).

A limit can only fire if every model the job calls has a price: a launch (or a resume) with a
limit beside an unpriced model is refused, naming the models (`cost_limit_refusal`). Before
sending new work every dispatcher asks `cost_limit_reached`; once what the job spent reaches
its limit the job is paused with the reason. Work already with the workers finishes and is
paid for, so the spend can pass the limit by at most one window of work (a run's concurrency,
a scoring job's calls in flight). Resuming with a higher limit continues the job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal

from django.db import models

from jobs.models import JobStatus
from llm.services import prices


class CostLimitError(ValueError):
    """A cost limit that cannot be used as given; the message says why."""


def cost_limit_refusal(*, models: Iterable[str], cost_limit_usd: Decimal | None) -> str:
    """Why a job calling `models` cannot take this limit ("" when it can): a model without a
    price would be counted as free, and the limit would never fire."""
    if cost_limit_usd is None:
        return ""
    missing = prices.unpriced_models(models)
    if not missing:
        return ""
    verb = "has" if len(missing) == 1 else "have"
    return (
        f"A cost limit needs a price for every model the job calls; {', '.join(missing)} "
        f"{verb} no price (none in llm/data/prices.yaml, none set by staff), so the "
        "limit could never be reached. Set a price on the Prices page (or with --price "
        "MODEL=INPUT,OUTPUT on the command line), or launch without a cost limit."
    )


def cost_limit_reached(job: models.Model, *, spent: Decimal | Callable[[], Decimal]) -> bool:
    """Whether `job` (a row with status, cost_limit_usd and stop_reason) may send no more
    work; a running job whose spend reached its limit is paused with the reason.

    Pass `spent` as a function: it sums every unit of the job, and is asked only when the job
    has a limit (every finished unit dispatches, so a sum per dispatch without a limit would
    make a job's cost grow with the square of its size)."""
    limit = job.cost_limit_usd
    if limit is None:
        return False
    if callable(spent):
        spent = spent()
    if spent < limit:
        return False
    type(job).objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(
        status=JobStatus.PAUSED, stop_reason=limit_reason(spent, limit)
    )
    return True


def limit_reason(spent: Decimal, limit: Decimal) -> str:
    return (
        f"Cost limit reached: {money(spent)} spent of {money(limit)}. "
        "Raise the limit and resume to continue."
    )


def money(amount: Decimal) -> str:
    """Dollars to the cent, or to four decimals below a cent (offline tests spend fractions)."""
    return f"${amount:,.2f}" if abs(amount) >= Decimal("0.01") or amount == 0 else f"${amount:.4f}"


def cost_limit_for_resume(
    job: models.Model,
    *,
    spent: Decimal,
    models: Iterable[str],
    cost_limit_usd: Decimal | None,
) -> Decimal | None:
    """The limit a job resumes with: the new one if given, else its own. Refused when the
    spend already reaches it (the job would stop again at once) or a model lacks a price."""
    limit = job.cost_limit_usd if cost_limit_usd is None else cost_limit_usd
    if limit is not None and spent >= limit:
        raise CostLimitError(
            f"{money(spent)} is spent already, which reaches the cost limit of {money(limit)}: "
            "give a higher limit to resume."
        )
    refusal = cost_limit_refusal(models=models, cost_limit_usd=limit)
    if refusal:
        raise CostLimitError(refusal)
    return limit


def job_resume(
    job: models.Model,
    *,
    spent: Decimal,
    models: Iterable[str],
    cost_limit_usd: Decimal | None = None,
) -> None:
    """Set a paused job (any kind but runs, which resume through runs.run_resume) running
    again with its limit (raised when given); the caller then dispatches its work."""
    limit = cost_limit_for_resume(job, spent=spent, models=models, cost_limit_usd=cost_limit_usd)
    type(job).objects.filter(pk=job.pk, status=JobStatus.PAUSED).update(
        status=JobStatus.RUNNING, stop_reason="", cost_limit_usd=limit
    )
    job.refresh_from_db()


def spent_of(rows: models.QuerySet) -> Decimal:
    """What rows with a `cost_usd` column spent: priced calls only (a launch with a limit
    refused every model without a price, so nothing a limit guards is left out)."""
    return rows.aggregate(spent=models.Sum("cost_usd"))["spent"] or Decimal(0)
