"""Score a run with a jury from the command line: `manage.py score_run <run_id> --jury <id|name>`.

The judge calls run in Celery workers, exactly as when scoring is launched from the web; with
--wait the command follows the job with a progress bar until no call is pending.
"""

import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from benchmark.models import Run
from jury.models import Jury, ScoringJob
from jury.services import scoring
from jury.tasks import scoring_start

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Score a run's finished conversations with a jury (judge calls run in the workers)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument("--jury", required=True, help="jury id or name")
        parser.add_argument(
            "--no-cache", action="store_true", help="ask the judges again even for identical calls"
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=64,
            help="judge calls with the workers at once (default 64); the rest wait their turn",
        )
        parser.add_argument(
            "--wait",
            action="store_true",
            help="show a progress bar until every judge call is answered",
        )

    def handle(
        self, *args, run_id: int, jury: str, no_cache: bool, concurrency: int, wait: bool, **options
    ):
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run {run_id}.")
        try:
            job = scoring.scoring_launch(
                run=run, jury=_jury(jury), use_cache=not no_cache, concurrency=concurrency
            )
        except scoring.ScoringError as error:
            raise CommandError(str(error)) from error
        queued = scoring_start(job)
        self.stdout.write(
            f"Scoring job {job.pk}: {queued} judge calls queued, {job.concurrency} at a time."
        )
        if wait:
            self._follow(job)

    def _follow(self, job: ScoringJob) -> None:
        progress = scoring.scoring_progress(job)
        with tqdm(total=progress["total"], unit="call", desc=f"job {job.pk}") as bar:
            while True:
                bar.update(progress["done"] - bar.n)
                bar.set_postfix(
                    valid=progress["valid"], invalid=progress["invalid"], error=progress["error"]
                )
                if not progress["pending"]:
                    break
                time.sleep(POLL_SECONDS)
                progress = scoring.scoring_progress(job)
        cost = "unknown" if progress["cost"] is None else f"${progress['cost']:.4f}"
        self.stdout.write(
            f"{progress['valid']} valid, {progress['invalid']} invalid, {progress['error']} "
            f"error; tokens {progress['input_tokens']} in / {progress['output_tokens']} out; "
            f"cost {cost}; {progress['cached']} from the cache."
        )


def _jury(value: str) -> Jury:
    found = Jury.objects.filter(pk=int(value)) if value.isdigit() else Jury.objects.none()
    jury = found.first() or Jury.objects.filter(name=value).first()
    if jury is None:
        raise CommandError(f"There is no jury with id or name {value!r}.")
    return jury
