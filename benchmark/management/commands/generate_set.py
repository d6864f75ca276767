"""Generate a benchmark set from a distribution (CLI twin of the "Generate" page)."""

from decimal import Decimal
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.engine.distribution import DistributionError
from benchmark.models import BenchmarkSet, EntryStatus
from benchmark.services import cases, forecasts
from jobs.models import JobStatus
from jobs.services import accounting
from jobs.services.cli import (
    add_price_argument,
    cost_text,
    price_options,
    progress_bar,
    wait_until,
)
from jobs.services.starts import job_start
from llm.engine.forecast import text_table


class Command(BaseCommand):
    help = "Sample N seeds and enrich them into patient entries (in workers, or --inline)."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--size", type=int, default=24)
        parser.add_argument("--seed", type=int, default=2026, help="sampler seed")
        parser.add_argument("--model", default="offline/standard", help="enrichment model")
        parser.add_argument(
            "--cost-limit",
            type=Decimal,
            default=None,
            help="USD; no new entry is sent once the set spent this much (the model needs a "
            "price: in prices.yaml, set on the Prices page, or with --price)",
        )
        add_price_argument(parser)
        parser.add_argument(
            "--distribution", type=Path, help="YAML file (default: the shipped distribution)"
        )
        parser.add_argument(
            "--inline", action="store_true", help="enrich in this process instead of the workers"
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            help="send the enrichment calls through the providers' batch APIs: about half the "
            "price, results within 24 h (openai/, anthropic/ and offline/ models)",
        )
        parser.add_argument(
            "--resend-live",
            action="store_true",
            help="with --batch: call live what a batch left unanswered, not in another batch",
        )
        parser.add_argument("--no-wait", action="store_true", help="return once queued")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the forecast of the enrichment calls, tokens and cost (from the newest "
            "enriched set; with --batch at the batch price) and exit without creating anything",
        )

    def handle(self, *args, name, size, seed, model, distribution, inline, no_wait, **options):
        if inline and options["batch"]:
            raise CommandError("--inline and --batch exclude each other: batches are polled.")
        if options["dry_run"]:
            if options["price"]:
                raise CommandError("--dry-run sets no price: drop --price.")
            result = forecasts.new_set_forecast(size=size, model=model, batch=options["batch"])
            self.stdout.write(text_table(result))
            return
        price_options(options["price"], command="generate_set")
        try:
            benchmark_set = cases.benchmark_set_create(
                name=name,
                distribution=self._distribution(distribution),
                size=size,
                sampler_seed=seed,
                generator_model=model,
                cost_limit_usd=options["cost_limit"],
                batch=options["batch"],
                batch_resend_live=options["resend_live"],
            )
        except cases.BenchmarkSetError as error:
            raise CommandError(str(error)) from None
        if inline:
            self._enrich_here(benchmark_set)
        else:
            job_start(benchmark_set)
            if not no_wait:
                wait_until(
                    lambda: _done(benchmark_set),
                    total=size,
                    label="enriching",
                    stop=lambda: _stopped(benchmark_set),
                )
        benchmark_set.refresh_from_db()
        progress = benchmark_set.progress()
        cost = cost_text(**accounting.cost_summary(benchmark_set.model_calls.all()))
        stopped = f" {benchmark_set.stop_reason}" if benchmark_set.stop_reason else ""
        summary = (
            f"Set {benchmark_set.pk} {name!r}: {progress['done']} ready, "
            f"{progress['failed']} failed, {progress['pending']} pending; cost {cost}.{stopped}"
        )
        if benchmark_set.status == JobStatus.FAILED:
            raise CommandError(f"{summary} {benchmark_set.error}")
        self.stdout.write(self.style.SUCCESS(summary))

    def _enrich_here(self, benchmark_set: BenchmarkSet) -> None:
        """Enrich in this process, one entry after another, checking the cost limit before
        each as the workers' dispatch does."""
        pending = cases.pending_entry_ids(benchmark_set)
        with progress_bar(len(pending), "enriching") as bar:
            for entry_id in pending:
                if cases.benchmark_set_over_limit(benchmark_set):
                    return
                cases.entry_enrich(entry_id)
                bar.update(1)

    def _distribution(self, path: Path | None):
        if path is None:
            return cases.distribution_default_ensure()
        try:
            return cases.distribution_create(name=path.stem, yaml_text=path.read_text())
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror}") from None
        except DistributionError as error:
            raise CommandError(str(error)) from None


def _done(benchmark_set: BenchmarkSet) -> int:
    return benchmark_set.entries.exclude(status=EntryStatus.PENDING).count()


def _stopped(benchmark_set: BenchmarkSet) -> bool:
    """Paused at its cost limit (or stopped otherwise): waiting would never end."""
    benchmark_set.refresh_from_db(fields=["status"])
    return benchmark_set.status != JobStatus.RUNNING
