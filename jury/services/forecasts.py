"""A scoring job's forecast before it is launched: each judge seat's calls, tokens and cost,
learnt from the scores of an earlier finished scoring job (llm.engine.forecast does the
arithmetic). A unit is one judge's score of one conversation on one rubric, repairs included;
the new job has (scorable conversations x rubrics) of them per seat.

The earlier job is the newest one with answered scores (whatever its status) of the same
run, else of the same set, else of any run (the forecast says which). Judge scores keep their
prompt-cache reads and writes, so a seat's cost is forecast at the rates the earlier job paid
(a job scored before they were kept counts none: its cost is then the uncached price).
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmark.models import Run
from jury.models import Jury, RubricVersion, ScoreStatus, ScoringJob
from jury.services.rubrics import current_versions
from llm.engine.forecast import Forecast, RoleDemand, UnitUsage, forecast
from llm.services.prices import catalog_in_force

ANSWERED = (ScoreStatus.VALID, ScoreStatus.INVALID, ScoreStatus.ERROR)
NO_SOURCE = (
    "No finished scoring job to forecast from: score a few conversations first (a small "
    "pilot run), then come back."
)


def scoring_source(run: Run) -> tuple[ScoringJob | None, str]:
    """The earlier scoring job to learn from and a sentence saying which."""
    finished = (
        ScoringJob.objects.filter(scores__status__in=ANSWERED).distinct().select_related("run")
    )
    for found, where in (
        (finished.filter(run=run), "of the same run"),
        (finished.filter(run__benchmark_set_id=run.benchmark_set_id), "of another run of the set"),
        (finished, "of another set's run: its conversations may differ in length"),
    ):
        job = found.order_by("-pk").first()
        if job is not None:
            return job, f"scoring job {job.pk} {where} ({job.run.name!r})"
    return None, NO_SOURCE


def scoring_forecast(*, batch: bool = False, **arguments) -> Forecast:
    """The forecast of `scoring.scoring_launch(run=run, jury=jury, ...)`: one role per seat
    (scoring_demands' arguments), at the batch price with `batch`."""
    demands, source = scoring_demands(**arguments)
    result = forecast(demands, catalog_in_force().price_for, batch=batch)
    result.source = source
    return result


def scoring_demands(
    *,
    run: Run,
    jury: Jury,
    rubric_versions: Sequence[RubricVersion] | None = None,
    source: ScoringJob | None = None,
    conversations: int | None = None,
) -> tuple[list[RoleDemand], str]:
    """Each judge seat with its earlier units, and the earlier job in words; `conversations`
    asks about that many instead of the run's scorable ones."""
    note = f"scoring job {source.pk}" if source else ""
    if source is None:
        source, note = scoring_source(run)
    if rubric_versions is None:
        rubric_versions = current_versions(judged_only=True)
    if conversations is None:
        conversations = run.conversations.scorable().count()
    units = conversations * len(rubric_versions)
    observed = _scores_by_model(source) if source else {}
    demands = [
        _seat_demand(seat, model, units, observed, source)
        for seat, model in enumerate(jury.judges, start=1)
    ]
    return demands, note


def _scores_by_model(job: ScoringJob) -> dict[str, list[UnitUsage]]:
    rows = job.scores.filter(status__in=ANSWERED).values_list(
        "judge_model",
        "calls",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
    )
    by_model: dict[str, list[UnitUsage]] = {}
    for model, *usage in rows:
        by_model.setdefault(model, []).append(UnitUsage(*usage))
    return by_model


def _seat_demand(seat: int, model: str, units: int, observed: dict, source) -> RoleDemand:
    """A seat learns from the earlier scores of the same judge model, else of every judge."""
    if model in observed:
        chosen, basis = observed[model], "the same judge model"
    else:
        chosen = [unit for units_of in observed.values() for unit in units_of]
        basis = "every judge (this model is new)"
    where = f"{len(chosen)} scores of job {source.pk}, {basis}" if source else ""
    return RoleDemand(f"judge {seat}", model, units, chosen, where)
