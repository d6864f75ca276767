"""Review the simulated patient of a run: `manage.py review_fidelity RUN_ID --model MODEL`.

The reviews run in the workers, as when launched from the run page; the command follows them
with a progress bar until none is pending (or the cost limit pauses the job), then prints the
fidelity rate."""

from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Run
from fidelity.forms import OFFLINE_REVIEWER
from fidelity.models import FidelityReview
from fidelity.services import reports, reviews
from jobs.models import JobStatus
from jobs.services.cli import add_price_argument, price_options, wait_until
from jobs.services.starts import job_start

POLL_SECONDS = 0.5


class Command(BaseCommand):
    help = "Review a run's conversations for simulated-patient errors (a fidelity review)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument(
            "--model", default=OFFLINE_REVIEWER, help=f"reviewer model (default {OFFLINE_REVIEWER})"
        )
        parser.add_argument("--no-cache", action="store_true", help="ask again for identical calls")
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--cost-limit", type=Decimal, default=None, help="USD")
        add_price_argument(parser)
        parser.add_argument("--no-wait", action="store_true", help="start the review and return")

    def handle(self, *args, run_id: int, model: str, **options) -> None:
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run {run_id}.")
        price_options(options["price"], command="review_fidelity")
        try:
            review = reviews.review_launch(
                run=run,
                reviewer_model=model,
                use_cache=not options["no_cache"],
                concurrency=options["concurrency"],
                cost_limit_usd=options["cost_limit"],
            )
        except reviews.ReviewError as error:
            raise CommandError(str(error)) from error
        job_start(review)
        total = review.conversation_reviews.count()
        self.stdout.write(f"Fidelity review {review.pk}: {total} conversations to review.")
        if options["no_wait"]:
            return
        wait_until(
            lambda: reviews.review_progress(review)["finished"],
            total=total,
            label=f"review {review.pk}",
            poll=POLL_SECONDS,
            stop=lambda: _paused(review),
        )
        self._summary(review)

    def _summary(self, review: FidelityReview) -> None:
        review.refresh_from_db()
        progress = reviews.review_progress(review)
        overall = reports.review_report(review)["overall"]
        rate = (
            f"fidelity rate {overall.rate:.2f} [{overall.low:.2f}, {overall.high:.2f}]"
            if overall
            else "fidelity rate undefined (nothing reviewed)"
        )
        self.stdout.write(
            f"{review.get_status_display()}: {progress['done']} reviewed, {progress['flagged']} "
            f"flagged, {progress['failed']} failed; {rate}. {review.stop_reason}".rstrip()
        )


def _paused(review: FidelityReview) -> bool:
    review.refresh_from_db(fields=["status"])
    return review.status == JobStatus.PAUSED
