"""Measure coverage (CIA) of expert criteria by a generation job's rubrics:
`manage.py lab_coverage GENERATION_JOB_ID --judge MODEL [--compare COVERAGE_RUN_ID]`."""

from django.core.management.base import BaseCommand

from rubric_lab.management.lab_cli import (
    add_batch_arguments,
    add_cost_arguments,
    add_play_arguments,
    inline_batch_refuse,
    object_or_error,
    play,
)
from rubric_lab.management.lab_forecast_cli import add_dry_run_argument, launched_or_forecast
from rubric_lab.models import CoverageRun, GenerationJob
from rubric_lab.services import coverage


class Command(BaseCommand):
    help = (
        "Judge how much of the expert criteria each rubric of a generation job entails "
        "(recall, precision, F1, overall and per axis), with a progress bar; --compare tests "
        "the difference in recall against another coverage run (McNemar's test adjusted for "
        "conversations, with a bootstrap interval)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("generation_job_id", type=int)
        parser.add_argument("--judge", required=True, help="the decomposition and entailment judge")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--compare",
            type=int,
            default=None,
            metavar="COVERAGE_RUN_ID",
            help="once done, compare recall with this coverage run on the same expert criteria",
        )
        add_batch_arguments(parser, "the judge's calls")
        add_play_arguments(parser, concurrency_help="cases at once (default 8)")
        add_cost_arguments(parser)
        add_dry_run_argument(parser)

    def handle(self, *args, generation_job_id: int, **opts) -> None:
        inline_batch_refuse(opts)
        job = object_or_error(GenerationJob, generation_job_id, "generation job")
        other = None
        if opts["compare"] is not None:
            other = object_or_error(CoverageRun, opts["compare"], "coverage run")

        def launch():
            return coverage.coverage_launch(
                generation_job=job,
                judge_model=opts["judge"],
                name=opts["name"],
                use_cache=not opts["no_cache"],
                concurrency=opts["concurrency"],
                cost_limit_usd=opts["cost_limit"],
                batch=opts["batch"],
                batch_resend_live=opts["resend_live"],
            )

        run = launched_or_forecast(
            self, launch, opts, name="lab_coverage", refused=coverage.CoverageError
        )
        if run is None:
            return
        self.stdout.write(f"Coverage run {run.pk} {run.name!r}: {run.cases.count()} cases.")
        play(self, run, "coverage", inline=opts["inline"], wait=not opts["no_wait"])
        overall = coverage.coverage_results(run)["overall"]
        if overall is not None:
            micro, bounds = overall.micro, overall.intervals
            self.stdout.write(
                f"Recall {_figure(bounds.recall)}, precision {_figure(bounds.precision)}, "
                f"F1 {_figure(bounds.f1)} (pooled over {micro.constraints} constraints of "
                f"{overall.cases} conversations; 95% intervals resampling conversations)."
            )
        if other is not None and opts["no_wait"] and not opts["inline"]:
            self.stdout.write("Not compared: the run is still with the workers (--no-wait).")
        elif other is not None:
            compared = coverage.coverage_compare(run, other).overall
            test = compared.test
            self.stdout.write(
                f"Against coverage run {other.pk}: recall {_figure(compared.recall_a)} vs "
                f"{_figure(compared.recall_b)}, difference {_figure(compared.difference)} on "
                f"{test.pairs} paired constraints of {test.clusters} conversations "
                f"({test.only_a} entailed only here, {test.only_b} only there); p = "
                f"{test.p_value:.4g} ({coverage.comparison_method(test)})."
            )


def _figure(estimate) -> str:
    if estimate is None:
        return "-"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"
