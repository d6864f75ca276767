"""`--dry-run` of the lab's launch commands: the forecast table of what the launch would call
and spend per stage (rubric_lab.services.study_forecasts), with nothing created or sent."""

from __future__ import annotations

from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError

from jobs.services.cli import price_options
from llm.engine.forecast import nothing_observed, text_table
from rubric_lab.services import study_forecasts


def add_dry_run_argument(parser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the forecast of each stage's calls, tokens and cost (from an earlier study "
        "of the same kind) and exit without creating or calling anything",
    )


def dry_run_print(
    command: BaseCommand, launch: Callable[[], object], *, prices_given: bool = False
) -> None:
    """Forecast `launch()` (its refusal propagates as from a real launch) and print it. A dry
    run stores nothing, so --price options are not applied: it says so."""
    result = study_forecasts.launch_forecast(launch)
    if nothing_observed(result):
        command.stdout.write(
            command.style.WARNING(
                "This forecast rests on no earlier calls: only the number of units is known. "
                "Launch a small study first (a pilot), then ask again."
            )
        )
    command.stdout.write(text_table(result))
    if prices_given:
        command.stdout.write(
            "--price was not applied (a dry run stores nothing): the costs are at the prices "
            "in force; set prices on the Prices page to forecast with them."
        )


def launched_or_forecast(
    command: BaseCommand, launch: Callable[[], object], opts: dict, *, name: str, refused
):
    """`launch()` after applying the --price options, or with --dry-run its forecast printed
    and None; a refusal (an exception of the class `refused`) is a CommandError."""
    try:
        if opts["dry_run"]:
            dry_run_print(command, launch, prices_given=bool(opts["price"]))
            return None
        price_options(opts["price"], command=name)
        return launch()
    except refused as error:
        raise CommandError(str(error)) from None
