"""pass^k of a scored run: `manage.py reliability_report RUN_ID [--job ID] [--format csv]`.

One row per model, measure (the aggregate and each rubric), stratum ("all", then each value of
each case attribute) and k = 1 to the run's repetitions: pass_hat_k with its 95% bootstrap
interval over cases, the expected worst score of k encounters and the cases counted. The scores
are the run's newest finished scoring job's unless --job names another.
"""

from django.core.management.base import BaseCommand, CommandError

from jobs.models import JobStatus
from jury.engine.reliability import RECOMMENDED_REPETITIONS
from jury.engine.stats import export_table
from jury.models import ScoringJob
from jury.services.reports import EXPORT_CAPTIONS, Report

FORMATS = {"csv": "csv", "markdown": "markdown", "latex": "latex"}


class Command(BaseCommand):
    help = "Print pass^k (and the expected worst of k) for every model of a scored run."

    def add_arguments(self, parser) -> None:
        parser.add_argument("run_id", type=int)
        parser.add_argument(
            "--job", type=int, help="the scoring job (default: the newest finished)"
        )
        parser.add_argument("--format", choices=sorted(FORMATS), default="csv")

    def handle(self, *args, **options) -> None:
        job = _scoring_job(options["run_id"], options["job"])
        report = Report(job)
        if report.empty:
            raise CommandError(f"scoring job {job.pk} has no complete conversation yet")
        repetitions = job.run.repetitions
        if repetitions < RECOMMENDED_REPETITIONS:
            self.stderr.write(
                f"run {job.run_id} has {repetitions} repetition(s): pass^k stops at k = "
                f"{repetitions} (at least {RECOMMENDED_REPETITIONS} give a useful curve)"
            )
        text = export_table(
            report.reliability,
            FORMATS[options["format"]],
            caption=f"{EXPORT_CAPTIONS['reliability']}; run {job.run.name}, jury {job.jury.name}",
            label=f"run {job.run_id} reliability",
        )
        self.stdout.write(text, ending="")


def _scoring_job(run_id: int, job_id: int | None) -> ScoringJob:
    jobs = ScoringJob.objects.filter(run_id=run_id)
    if job_id is not None:
        job = jobs.filter(pk=job_id).first()
        if job is None:
            raise CommandError(f"run {run_id} has no scoring job {job_id}")
        return job
    job = jobs.filter(status=JobStatus.FINISHED).order_by("-pk").first()
    if job is None:
        raise CommandError(f"run {run_id} has no finished scoring job: score it first (score_run)")
    return job
