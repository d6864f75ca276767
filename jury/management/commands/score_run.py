"""Score a run with a jury from the command line: `manage.py score_run <run_id> --jury <id|name>`.

The judge calls run in Celery workers, exactly as when scoring is launched from the web; with
--wait the command follows the job with a progress bar until no call is pending.
"""

import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from benchmark.models import Run
from jobs.models import JobStatus
from jobs.services.cli import add_price_argument, cost_text, price_options
from jury.models import Jury, ScoringJob
from jury.services import forecasts, scoring
from jury.services.scoring import scoring_start
from llm.engine.forecast import Forecast, nothing_observed, text_table

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
            "--cost-limit",
            type=Decimal,
            default=None,
            help="USD; no new judge call is sent once the job spent this much (every judge "
            "needs a price: in prices.yaml, set on the Prices page, or with --price)",
        )
        add_price_argument(parser)
        parser.add_argument(
            "--batch",
            action="store_true",
            help="send the judge calls through the providers' batch APIs: about half the "
            "price, results within 24 h (openai/, anthropic/ and offline/ judges)",
        )
        parser.add_argument(
            "--resend-live",
            action="store_true",
            help="with --batch: call live what a batch left unanswered, not in another batch",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the forecast of each judge's calls, tokens and cost (from an earlier "
            "scoring job) and exit without creating anything",
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
        if options["dry_run"]:
            result = forecasts.scoring_forecast(run=run, jury=_jury(jury), batch=options["batch"])
            if nothing_observed(result):
                self.stdout.write(self.style.WARNING(_nothing_to_forecast_from(result)))
            self.stdout.write(text_table(result))
            return
        price_options(options["price"], command="score_run")
        try:
            job = scoring.scoring_launch(
                run=run,
                jury=_jury(jury),
                use_cache=not no_cache,
                concurrency=concurrency,
                cost_limit_usd=options["cost_limit"],
                batch=options["batch"],
                batch_resend_live=options["resend_live"],
            )
        except scoring.ScoringError as error:
            raise CommandError(str(error)) from error
        queued = scoring_start(job)
        how = (
            "in batches, polled by the job's watch" if job.batch else f"{job.concurrency} at a time"
        )
        self.stdout.write(f"Scoring job {job.pk}: {queued} judge calls queued, {how}.")
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
                if not progress["pending"] or _stopped(job):
                    break
                time.sleep(POLL_SECONDS)
                progress = scoring.scoring_progress(job)
        cost = cost_text(
            cost=progress["cost"], calls=progress["calls"], cached=progress["cached_calls"]
        )
        job.refresh_from_db()
        stopped = f" {job.stop_reason}" if job.stop_reason else ""
        self.stdout.write(
            f"{progress['valid']} valid, {progress['invalid']} invalid, {progress['error']} "
            f"error, {progress['pending']} pending; tokens {progress['input_tokens']} in / "
            f"{progress['output_tokens']} out; cost {cost}; {progress['cached']} scores from "
            f"the cache.{stopped}"
        )


def _stopped(job: ScoringJob) -> bool:
    """Paused at its cost limit: the pending calls wait for a resume, not for the workers."""
    job.refresh_from_db(fields=["status"])
    return job.status == JobStatus.PAUSED


def _jury(value: str) -> Jury:
    found = Jury.objects.filter(pk=int(value)) if value.isdigit() else Jury.objects.none()
    jury = found.first() or Jury.objects.filter(name=value).first()
    if jury is None:
        raise CommandError(f"There is no jury with id or name {value!r}.")
    if jury.is_fold:
        raise CommandError(
            f"Jury {jury.name!r} is a fold jury: it only cross-fits one fold of a study's "
            "calibration. Score with the jury or one of its promoted versions."
        )
    return jury


def _nothing_to_forecast_from(result: Forecast) -> str:
    """What a forecast with no earlier score rests on: only each seat's count of scores."""
    units = result.roles[0].units if result.roles else 0
    return (
        "This forecast rests on no earlier calls: no scoring job has an answered score yet, so "
        f"only the number of scores is known ({units:,} per judge seat: scorable conversations "
        "x rubrics); calls, tokens and cost are unknown. Score a few conversations first (a "
        "small pilot run), then ask again."
    )
