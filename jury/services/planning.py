"""Plan a run: from an earlier scored run of a set (or a small pilot), how many cases,
repetitions and judges give each model's mean score the precision a researcher asks for, and
what that would cost at the prices in force.

The variance components come from the earlier run's report (jury.engine.variance), the
arithmetic from jury.engine.decision, the cost from the earlier run's tokens per conversation
and per judge, priced with today's price file and staff prices (a model without a price counts
as free and is named).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db.models import Count, Sum

from benchmark.models import ModelCall
from benchmark.services.runs import ASSISTANT, PATIENT, ROSTER
from jobs.models import JobStatus
from jury.engine import decision
from jury.engine.variance import COMPONENT_NAMES, COMPONENTS
from jury.models import JudgeScore, ScoringJob
from jury.services.reports import Report
from llm.engine.chat import Usage
from llm.services.prices import catalog_in_force

PLANS_SHOWN = 8


@dataclass
class ModelPlan:
    model: str
    components: dict[str, float]
    as_run: decision.Plan
    what_if: decision.Plan | None
    plans: list[decision.Plan]


@dataclass
class RunPlan:
    job: ScoringJob
    measure: str
    target: str  # what the researcher asked for, in words
    between: float
    models: list[ModelPlan] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)


def plan_sources(benchmark_set_id: int | None = None):
    """Finished scoring jobs a plan can start from, newest first (of one set when given)."""
    jobs = ScoringJob.objects.filter(status=JobStatus.FINISHED).select_related(
        "run__benchmark_set", "jury"
    )
    if benchmark_set_id:
        jobs = jobs.filter(run__benchmark_set_id=benchmark_set_id)
    return jobs.order_by("-pk")


def run_plan(
    job: ScoringJob,
    *,
    measure: str = "aggregate",
    half_width: float | None = None,
    goal: float | None = None,
    what_if: tuple[int, int, int] | None = None,
) -> RunPlan:
    """Each model's plans for the target (a 95% half-width, else a generalizability coefficient)
    and, when asked, what a run of what_if = (cases, repetitions, judges) would give."""
    report = Report(job)
    components = _components(report, measure)
    design = _design(report, measure)
    models = list(components)
    errors = [decision.error_variance(components[m], *design[m]) for m in models]
    means = report.judge_encounters.query("measure == @measure").groupby("model")["score"].mean()
    between = decision.between_model_variance([means[m] for m in models], errors)
    allowed = decision.target_error(half_width=half_width, goal=goal, between=between)
    costs, unpriced = run_costs(report)
    result = RunPlan(job, measure, _target_words(half_width, goal), between, unpriced=unpriced)
    for model in models:
        cost = costs.get(model, decision.Costs(0.0, 0.0))
        found = decision.plans(components[model], between, cost, allowed)
        result.models.append(
            ModelPlan(
                model=report.label(model),
                components=components[model],
                as_run=decision.evaluate(components[model], between, cost, *design[model]),
                what_if=what_if and decision.evaluate(components[model], between, cost, *what_if),
                plans=found[:PLANS_SHOWN],
            )
        )
    return result


def _components(report: Report, measure: str) -> dict[str, dict[str, float]]:
    rows = report.variance.query("measure == @measure")
    labels = {report.label(model): model for model in report.conversations["model"].unique()}
    return {
        labels[model]: {row.component: row.variance for row in group.itertuples()}
        for model, group in rows.groupby("model", sort=False)
    }


def _design(report: Report, measure: str) -> dict[str, tuple[int, float, int]]:
    """Per model: cases, mean repetitions per case and judges of the earlier run."""
    frame = report.judge_encounters.query("measure == @measure")
    design = {}
    for model, group in frame.groupby("model", sort=False):
        cases = group["case"].nunique()
        design[model] = (cases, group["conversation"].nunique() / cases, group["judge"].nunique())
    return design


def _target_words(half_width: float | None, goal: float | None) -> str:
    if half_width is not None:
        return f"a 95% interval of +/- {half_width:g} around each model's mean"
    return f"a generalizability coefficient of {goal:g}"


def run_costs(report: Report) -> tuple[dict[str, decision.Costs], list[str]]:
    """Per model (its raw label): the predicted cost of one conversation and of one judge
    scoring it, from the earlier run's tokens at the prices in force; and the unpriced models."""
    catalog = catalog_in_force()
    unpriced: set[str] = set()

    def priced(model: str, input_tokens: int, output_tokens: int) -> float:
        price = catalog.price_for(model)
        if price is None:
            unpriced.add(model)
            return 0.0
        return float(price.cost(Usage(input_tokens or 0, output_tokens or 0)))

    conversation = _conversation_costs(report, priced)
    judge = _judge_cost(report, priced)
    costs = {model: decision.Costs(conversation.get(model, 0.0), judge) for model in conversation}
    return costs, sorted(unpriced)


def _conversation_costs(report: Report, priced) -> dict[str, float]:
    """Mean cost of one conversation per model: its agent's and patient's calls, and the
    rosters spread over all the run's conversations (each case's roster is written by one of
    its conversations, whichever came first, and met by every agent's)."""
    calls = ModelCall.objects.filter(run=report.job.run)
    played_calls = calls.filter(conversation__isnull=False, purpose__in=(PATIENT, ASSISTANT))
    per_agent = _tokens(played_calls.values_list("conversation__run_agent__label", "model"))
    totals: dict[str, float] = {}
    for label, model, input_tokens, output_tokens in per_agent:
        totals[label] = totals.get(label, 0.0) + priced(model, input_tokens, output_tokens)
    counts = report.job.run.conversations.values("run_agent__label").annotate(n=Count("id"))
    conversations = {row["run_agent__label"]: row["n"] for row in counts}
    shared = _tokens(calls.filter(purpose=ROSTER).values_list("model"))
    played = max(sum(conversations.values()), 1)
    spread = sum(priced(model, i, o) for model, i, o in shared) / played
    return {label: totals.get(label, 0.0) / n + spread for label, n in conversations.items() if n}


def _judge_cost(report: Report, priced) -> float:
    """Mean cost of one judge scoring one conversation on every rubric."""
    rows = _tokens(JudgeScore.objects.filter(job=report.job).values_list("judge_model"))
    rows = rows.annotate(n=Count("conversation", distinct=True))
    per_judge = [priced(model, i, o) / n for model, i, o, n in rows if n]
    return sum(per_judge) / len(per_judge) if per_judge else 0.0


def _tokens(grouped):
    """A values_list grouping with its input and output tokens summed."""
    return grouped.annotate(i=Sum("input_tokens"), o=Sum("output_tokens"))


def model_sections(result: RunPlan) -> list[dict]:
    """What the plan page shows per model, as text: components, the earlier run's precision, the
    size tried and the cheapest plans that reach the target."""
    return [
        {
            "model": plan.model,
            "components": [
                (COMPONENT_NAMES[name], _number(plan.components.get(name, math.nan)))
                for name in COMPONENTS
            ],
            "as_run": _plan_text(plan.as_run),
            "what_if": plan.what_if and _plan_text(plan.what_if),
            "plans": [_plan_text(found) for found in plan.plans],
        }
        for plan in result.models
    ]


def _plan_text(plan: decision.Plan) -> dict:
    return {
        "cases": plan.cases,
        "repetitions": f"{plan.repetitions:g}" if plan.repetitions % 1 else int(plan.repetitions),
        "judges": plan.judges,
        "conversations": round(plan.cases * plan.repetitions),
        "half_width": f"+/- {plan.half_width:.3f}",
        "coefficient": _number(plan.coefficient, digits=2),
        "cost": f"${plan.cost:,.2f}",
    }


def _number(value: float, digits: int = 3) -> str:
    return "undefined" if value is None or math.isnan(value) else f"{value:.{digits}f}"
