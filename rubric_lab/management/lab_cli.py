"""What the rubric lab's commands share: how each kind of job is played (in the workers, or
here with --inline), its progress bar, and the summary line with the job's cost."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from django.core.management.base import CommandError
from django.db import models

from jobs.models import JobStatus
from jobs.services.cli import cost_text, wait_until
from jobs.services.starts import job_start
from jobs.services.worker_heartbeats import stalled_message, worker_health
from rubric_lab.services import budgets, coverage, pipeline, sensitivity
from rubric_lab.services.inline import LabJobKind, job_execute_inline


def _kinds() -> dict[str, LabJobKind]:
    return {
        "generation": LabJobKind(
            "rubric generations",
            lambda job: job.generations.all(),
            pipeline.generation_dispatch,
            pipeline.generation_execute,
            job_start,
        ),
        "sensitivity": LabJobKind(
            "near-miss pairs",
            lambda study: study.pairs.all(),
            sensitivity.study_dispatch,
            sensitivity.near_miss_execute,
            job_start,
        ),
        "coverage": LabJobKind(
            "coverage cases",
            lambda run: run.cases.all(),
            coverage.coverage_dispatch,
            coverage.coverage_case_execute,
            job_start,
        ),
    }


def play(command, job: models.Model, kind_name: str, *, inline: bool, wait: bool) -> None:
    """Play the job's units here (--inline) or send them to the workers, with a progress bar
    until none is pending (unless not waiting); then the summary, and exit 1 when the job is
    left unfinished (paused at its cost limit, or still with the workers after --no-wait
    is fine)."""
    kind = _kinds()[kind_name]
    total = kind.units(job).count()
    if inline:
        from jobs.services.cli import progress_bar

        with progress_bar(total, kind.units_label) as bar:
            job_execute_inline(
                job,
                kind,
                threads=job.concurrency,
                on_progress=lambda: bar.update(_settled(job, kind) - bar.n),
            )
            bar.update(_settled(job, kind) - bar.n)
    else:
        kind.start(job)
        if wait:
            health = worker_health(waiting=True, job=job)
            if health.stalled:
                command.stderr.write(stalled_message(health))
            wait_until(
                lambda: _settled(job, kind),
                total=total,
                label=kind.units_label,
                stop=lambda: _stopped(job),
            )
    summary = summary_line(job, kind)
    job.refresh_from_db()
    if job.status in (JobStatus.FINISHED, JobStatus.FAILED) or (not wait and not inline):
        command.stdout.write(summary)
        if job.status == JobStatus.FAILED:
            raise CommandError(f"{summary} The job failed: {job.failure_reason}")
        return
    reason = f": {job.stop_reason}" if job.stop_reason else "."
    raise CommandError(
        f"{summary} Not finished: the job is {job.get_status_display().lower()}{reason}"
    )


def summary_line(job: models.Model, kind: LabJobKind) -> str:
    counts = Counter(kind.units(job).values_list("status", flat=True))
    states = ", ".join(
        f"{number} {status.replace('_', ' ')}" for status, number in sorted(counts.items())
    )
    rows = budgets.job_model_costs(job)
    cost = _total([row["cost"] for row in rows])
    spent = cost_text(
        cost=cost,
        calls=sum(row["calls"] for row in rows),
        cached=sum(row["cached"] for row in rows),
    )
    name = type(job)._meta.verbose_name
    return f"{name.capitalize()} {job.pk} {job.name!r}: {states}; cost {spent}."


def _total(costs: list) -> Decimal | None:
    if any(cost is None for cost in costs):
        return None
    return sum((Decimal(cost) for cost in costs), Decimal(0))


def _settled(job: models.Model, kind: LabJobKind) -> int:
    return kind.units(job).exclude(status="pending").count()


def _stopped(job: models.Model) -> bool:
    """Paused at its cost limit: the pending units wait for a resume, not for the workers."""
    return not type(job).objects.filter(pk=job.pk, status=JobStatus.RUNNING).exists()


def add_play_arguments(parser, *, concurrency_help: str) -> None:
    """--concurrency, --no-cache, --inline, --no-wait: how every lab command plays its job."""
    parser.add_argument("--concurrency", type=int, default=8, help=concurrency_help)
    parser.add_argument(
        "--no-cache", action="store_true", help="ask the models again even for identical calls"
    )
    parser.add_argument(
        "--inline",
        action="store_true",
        help="play the job in this process (threads) instead of the workers: small jobs, "
        "or a machine without a worker",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="return once the job is with the workers (no progress bar)",
    )


def add_cost_arguments(parser) -> None:
    from jobs.services.cli import add_price_argument

    parser.add_argument(
        "--cost-limit",
        type=Decimal,
        default=None,
        help="USD; no new work is sent once the job spent this much (every model it calls "
        "needs a price: in prices.yaml, set on the Prices page, or with --price)",
    )
    add_price_argument(parser)


def object_or_error(model: type[models.Model], pk: int, label: str):
    found = model.objects.filter(pk=pk).first()
    if found is None:
        raise CommandError(f"There is no {label} {pk}.")
    return found


def add_batch_arguments(parser, calls: str) -> None:
    """--batch and --resend-live, as every lab command with batch mode takes them."""
    parser.add_argument(
        "--batch",
        action="store_true",
        help=f"send {calls} through the providers' batch APIs: about half the price, each "
        "round of calls within 24 h (openai/, anthropic/ and offline/ models)",
    )
    parser.add_argument(
        "--resend-live",
        action="store_true",
        help="with --batch: call live what a batch left unanswered, not in another batch",
    )


def inline_batch_refuse(opts: dict) -> None:
    if opts["inline"] and opts["batch"]:
        raise CommandError("--inline and --batch exclude each other: batches are polled.")
