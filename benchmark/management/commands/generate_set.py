"""Generate a benchmark set from a distribution (CLI twin of the "Generate" page)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.engine.distribution import DistributionError
from benchmark.models import BenchmarkSet, EntryStatus
from benchmark.services import cases
from benchmark.services.cli import progress_bar, wait_until


class Command(BaseCommand):
    help = "Sample N seeds and enrich them into patient entries (in workers, or --inline)."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--size", type=int, default=24)
        parser.add_argument("--seed", type=int, default=2026, help="sampler seed")
        parser.add_argument("--model", default="offline/standard", help="enrichment model")
        parser.add_argument(
            "--distribution", type=Path, help="YAML file (default: the shipped distribution)"
        )
        parser.add_argument(
            "--inline", action="store_true", help="enrich in this process instead of the workers"
        )
        parser.add_argument("--no-wait", action="store_true", help="return once queued")

    def handle(self, *args, name, size, seed, model, distribution, inline, no_wait, **options):
        benchmark_set = cases.benchmark_set_create(
            name=name,
            distribution=self._distribution(distribution),
            size=size,
            sampler_seed=seed,
            generator_model=model,
        )
        pending = cases.pending_entry_ids(benchmark_set)
        if inline:
            with progress_bar(len(pending), "enriching") as bar:
                for entry_id in pending:
                    cases.entry_enrich(entry_id)
                    bar.update(1)
        else:
            from benchmark.tasks import enrichment_start

            enrichment_start(benchmark_set)
            if not no_wait:
                wait_until(lambda: _done(benchmark_set), total=size, label="enriching")
        progress = benchmark_set.progress()
        self.stdout.write(
            self.style.SUCCESS(
                f"Set {benchmark_set.pk} {name!r}: {progress['done']} ready, "
                f"{progress['failed']} failed, {progress['pending']} pending."
            )
        )

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
