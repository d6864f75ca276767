"""A run's forecast before it is launched: each agent's, the patient simulator's and the roster
writer's calls, tokens and cost, learnt from the conversations of an earlier finished run
(llm.engine.forecast does the arithmetic; this module finds the earlier units).

The earlier run is the newest run of the same set with finished conversations (finished,
paused or cancelled: its finished conversations are what counts), else the newest such run of
any set (the forecast says so). A finished conversation is a unit: what its calls of one role
used.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Sum
from django.utils import timezone

from benchmark.models import (
    BenchmarkSet,
    ConversationStatus,
    EntryStatus,
    ModelCall,
    Run,
)
from benchmark.services import runs
from benchmark.services.runs import ASSISTANT, PATIENT, ROSTER, AgentChoice
from jobs.models import JobStatus
from llm.engine.forecast import Forecast, RoleDemand, UnitUsage, forecast
from llm.services.prices import catalog_in_force

NO_SOURCE = (
    "No finished run to forecast from: launch a small pilot run first (a few cases, one "
    "repetition), then come back."
)

NO_ENRICHMENT_SOURCE = (
    "No enriched set to forecast from: generate a small set first (a few cases), then come back."
)


# A pilot plays the chosen agent configurations with these scripts: free, at once, and their
# calls report the prompt-cache reads a provider would have given them (llm.engine.prompt_cache).
PILOT_AGENT_MODEL = "offline/careful"
PILOT_PATIENT_MODEL = "offline/patient"
PILOT_CONCURRENCY = 4


def pilot_needed(benchmark_set: BenchmarkSet) -> bool:
    """Whether the set has no run with a finished conversation to forecast from."""
    finished = Run.objects.filter(
        benchmark_set=benchmark_set, conversations__status=ConversationStatus.FINISHED
    )
    return not finished.exists()


def pilot_launch(
    *, benchmark_set: BenchmarkSet, agents: list[AgentChoice], conversations: int
) -> Run:
    """A pilot run of the set's first `conversations` cases (at least one per agent
    configuration), played by the offline scripts with the chosen agent configurations, for
    the forecast to learn each role's calls and tokens from. The caller plays it (the CLI, in
    its own process). The scripts' token counts stand in for the real models': the forecast
    says which run it learnt from."""
    if conversations < 1:
        raise runs.RunError("A pilot needs at least one conversation.")
    configs = list({choice.agent_config.pk: choice.agent_config for choice in agents}.values())
    run = runs.run_launch(
        name=f"Pilot of {benchmark_set.name} ({conversations} offline conversations, "
        f"{timezone.now():%Y-%m-%d %H:%M})",
        benchmark_set=benchmark_set,
        agents=[AgentChoice(PILOT_AGENT_MODEL, config) for config in configs],
        patient_model=PILOT_PATIENT_MODEL,
        concurrency=PILOT_CONCURRENCY,
    )
    # Launched case by case for every configuration; the cases past the first few are left
    # out before anything is played, so the pilot stays small whatever the set's size.
    kept = run.conversations.order_by("pk").values_list("pk", flat=True)[
        : max(conversations, len(configs))
    ]
    run.conversations.exclude(pk__in=list(kept)).delete()
    return run


def pilot_playing(benchmark_set: BenchmarkSet) -> Run | None:
    """The set's pilot still queued or playing in the workers, if any: a caller asking again
    before it finished waits for it instead of launching another (the API's dry run)."""
    return (
        Run.objects.filter(
            benchmark_set=benchmark_set,
            patient_model=PILOT_PATIENT_MODEL,
            agents__model=PILOT_AGENT_MODEL,
            status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
        )
        .distinct()
        .order_by("-pk")
        .first()
    )


def forecast_source(benchmark_set: BenchmarkSet | None) -> tuple[Run | None, str]:
    """The earlier run to learn from and a sentence saying which (and why, when it is not a
    run of the same set)."""
    finished = Run.objects.filter(conversations__status=ConversationStatus.FINISHED).distinct()
    same_set = finished.filter(benchmark_set=benchmark_set).order_by("-pk").first()
    if same_set is not None:
        return same_set, f"run {same_set.pk} {same_set.name!r} of the same set"
    other = finished.select_related("benchmark_set").order_by("-pk").first()
    if other is None:
        return None, NO_SOURCE
    return other, (
        f"run {other.pk} {other.name!r} of set {other.benchmark_set.name!r}: no finished run of "
        "this set yet, so its conversations may differ in length"
    )


def run_forecast(**arguments) -> Forecast:
    """The forecast of a run as `runs.run_launch` would create it (run_demands' arguments)."""
    demands, source = run_demands(**arguments)
    result = forecast(demands, catalog_in_force().price_for)
    result.source = source
    return result


def run_demands(
    *,
    benchmark_set: BenchmarkSet,
    agents: list[AgentChoice],
    patient_model: str,
    roster_model: str | None = None,
    repetitions: int = 1,
    source: Run | None = None,
    cases: int | None = None,
) -> tuple[list[RoleDemand], str]:
    """Each role of the run with its earlier units, and the earlier run in words. `cases`
    asks what a set of that many cases would need instead of the set's own (the bench's paper
    configuration)."""
    note = f"run {source.pk} {source.name!r}" if source else ""
    if source is None:
        source, note = forecast_source(benchmark_set)
    roster_model = roster_model or patient_model
    if cases is None:
        cases = benchmark_set.entries.filter(status=EntryStatus.READY).count()
    per_agent = cases * repetitions
    units = _conversation_units(source) if source else {}
    demands = [_agent_demand(choice, per_agent, units, source) for choice in agents]
    everyone = [usage for _, _, usage in units.values()]
    played = per_agent * len(agents)
    writers, roster_source = _roster_writers(source, everyone)
    demands += [
        _role_demand(PATIENT, patient_model, played, everyone, source),
        _role_demand(
            ROSTER, roster_model, per_agent, writers, roster_source, basis="each case's writer"
        ),
    ]
    return demands, note


def _roster_writers(
    source: Run | None, everyone: list[dict[str, UnitUsage]]
) -> tuple[list[dict[str, UnitUsage]], Run | None]:
    """The conversations that wrote their case's roster, and their run. A case's roster is
    written once per repetition and met by every agent (services.rosters); before rosters were
    shared each conversation wrote its own, so an older run's conversations each count. A
    run that wrote none (a replay, which reuses its cases' rosters) gives way to the newest
    run of its set that did."""
    writers = [usage for usage in everyone if ROSTER in usage]
    if writers or source is None:
        return writers, source
    earlier = (
        Run.objects.filter(benchmark_set=source.benchmark_set, model_calls__purpose=ROSTER)
        .exclude(pk=source.pk)
        .order_by("-pk")
        .first()
    )
    if earlier is None:
        return [], source
    units = _conversation_units(earlier).values()
    return [usage for _, _, usage in units if ROSTER in usage], earlier


def enrichment_forecast(
    benchmark_set: BenchmarkSet, *, cases: int, model: str, batch: bool = False
) -> Forecast:
    """Enriching `cases` new cases with `model`, learnt from `benchmark_set`'s enrichment
    calls; with `batch` (a set whose enrichment goes through the batch APIs: the set form's
    batch box, BenchmarkSet.batch) every call is priced at the model's batch price."""
    demand = enrichment_demand(benchmark_set, cases=cases, model=model)
    result = forecast([demand], catalog_in_force().price_for, batch=batch)
    result.source = f"set {benchmark_set.pk} {benchmark_set.name!r}" + (
        ", in batches (batch price)" if batch else ""
    )
    return result


def new_set_forecast(*, size: int, model: str, batch: bool = False) -> Forecast:
    """What enriching a new set of `size` cases with `model` would call and spend (the set
    form's and `generate_set`'s values; `batch`: at the batch price), learnt from the newest
    set with enrichment calls."""
    source, note = enrichment_source(model)
    if source is None:
        result = forecast([RoleDemand("enrichment", model, size, [])], catalog_in_force().price_for)
        result.source = note
        return result
    result = enrichment_forecast(source, cases=size, model=model, batch=batch)
    result.source = note + (", in batches (batch price)" if batch else "")
    return result


def enrichment_source(model: str) -> tuple[BenchmarkSet | None, str]:
    """The set to learn enrichment from: the newest one enriched with `model`, else the
    newest one enriched at all (said so: another model may write longer cases)."""
    enriched = BenchmarkSet.objects.filter(model_calls__purpose="enrichment").distinct()
    same_model = enriched.filter(generator_model=model).order_by("-pk").first()
    if same_model is not None:
        return same_model, f"set {same_model.pk} {same_model.name!r}, enriched with the same model"
    other = enriched.order_by("-pk").first()
    if other is None:
        return None, NO_ENRICHMENT_SOURCE
    return other, (
        f"set {other.pk} {other.name!r}, enriched with {other.generator_model}: no set was "
        "enriched with this model yet, so its calls may be longer or shorter"
    )


def enrichment_demand(benchmark_set: BenchmarkSet, *, cases: int, model: str) -> RoleDemand:
    """Enriching `cases` new cases with `model`, learnt from this set's enrichment calls. The
    accounting keeps a set's calls, not each case's, so a call is the unit here and a case is
    taken to need as many calls as this set's cases needed on average."""
    calls = benchmark_set.model_calls.filter(purpose="enrichment")
    ready = benchmark_set.entries.filter(status=EntryStatus.READY).count()
    observed = [_usage({"calls": 1, **row}) for row in calls.values(*_TOKEN_FIELDS)]
    per_case = len(observed) / ready if ready else 0
    return RoleDemand(
        "enrichment",
        model,
        round(per_case * cases),
        observed,
        f"set {benchmark_set.name!r}: {per_case:.2f} calls per case",
    )


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


def _conversation_units(run: Run) -> dict[int, tuple[str, str, dict[str, UnitUsage]]]:
    """Each finished conversation of `run`: its agent's model and label, and what its calls
    of each role used (a role it never called is absent: it counts as zero)."""
    conversations = run.conversations.filter(status=ConversationStatus.FINISHED).values_list(
        "pk", "run_agent__model", "run_agent__label"
    )
    usage: dict[int, dict[str, UnitUsage]] = defaultdict(dict)
    rows = (
        ModelCall.objects.filter(run=run, conversation__status=ConversationStatus.FINISHED)
        .values("conversation_id", "purpose")
        .annotate(
            calls=Count("id"),
            **{name: Sum(name) for name in _TOKEN_FIELDS},
        )
    )
    for row in rows:
        usage[row["conversation_id"]][row["purpose"]] = _usage(row)
    return {pk: (model, label, usage[pk]) for pk, model, label in conversations}


def _usage(row: dict) -> UnitUsage:
    return UnitUsage(calls=row["calls"], **{name: row[name] or 0 for name in _TOKEN_FIELDS})


def _agent_demand(choice: AgentChoice, units: int, observed: dict, source: Run | None):
    """An agent learns from the earlier conversations of the same agent (model and
    configuration), else of the same model, else of every agent of the earlier run."""
    same_label = [u for _, label, u in observed.values() if label == choice.label]
    same_model = [u for model, _, u in observed.values() if model == choice.model]
    if same_label:
        chosen, basis = same_label, "the same agent"
    elif same_model:
        chosen, basis = same_model, "the same model, another configuration"
    else:
        chosen, basis = [u for _, _, u in observed.values()], "every agent (this one is new)"
    role = f"agent: {choice.label}"
    return _role_demand(ASSISTANT, choice.model, units, chosen, source, basis=basis, role=role)


def _role_demand(
    purpose: str,
    model: str,
    units: int,
    conversations: list[dict[str, UnitUsage]],
    source: Run | None,
    *,
    basis: str = "every conversation",
    role: str = "",
) -> RoleDemand:
    observed = [usage.get(purpose, UnitUsage()) for usage in conversations]
    where = f"{len(observed)} conversations of run {source.pk}, {basis}" if source else ""
    return RoleDemand(role or purpose, model, units, observed, where)
