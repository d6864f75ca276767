"""Forecast what a job will call and spend before it sends its first call, from what the units
of an earlier job used (a conversation's calls of one role, one judge's score of one rubric).

For each role (agent, patient, roster, enrichment, a judge seat, a lab stage) the new
configuration has N units; the earlier job observed n units of that role. Each figure of the
role (calls, input tokens, cached input tokens, output tokens, cost at today's price of the
model the NEW configuration calls) is forecast as a sum of N units drawn like the observed ones:

    total = N * mean,  95% interval  total +/- t(0.975, n - 1) * sd * sqrt(N + N^2 / n)

This is the textbook prediction interval of one new draw (mean +/- t * sd * sqrt(1 + 1/n))
written for a sum of N draws: N * sd^2 is the spread of the new units themselves, N^2 * sd^2 / n
the uncertainty of the mean learnt from only n units. The second term dominates when a small
pilot forecasts a large run, which is what a researcher needs to see. A normal interval of the
sum rather than a bootstrap: the sum of hundreds of units is close to normal whatever one
unit's distribution, the closed form costs nothing for 144,000 units, and a bootstrap over a
pilot of 10 conversations would understate the mean's uncertainty (it has no t correction).
The low end is cut at 0. With one observed unit the spread is unknown: no interval.

The total's interval adds the roles' ends, as if they moved together (a longer conversation
costs more for agent and patient at once): it is wide rather than falsely narrow.

A model without a price has no cost: it is named in `unpriced`, never counted as free.

The earlier units' cache reads were made by other models (often the offline scripts, whose
simulated cache keeps prefixes of 1,024 tokens or more). A model whose provider caches only
longer prefixes (its price's `cache_min_tokens`: 4,096 for some small models) would not have
read what a unit read in calls shorter than that on average, so such a unit counts as
uncached for it: nothing read, nothing written.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from scipy.stats import t as student_t

from llm.engine.chat import Usage
from llm.engine.providers.catalog import Price

LEVEL = 0.95
FIGURES = ("calls", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens")
METHOD = (
    "95% prediction interval of a sum of N units drawn like the n observed ones: "
    "N x mean +/- t(n-1) x sd x sqrt(N + N^2/n)"
)


@dataclass(frozen=True)
class UnitUsage:
    """What one observed unit used: its calls and their tokens (all of them, whether the
    response cache answered or not, since a new configuration pays for them again)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def for_cache_minimum(self, min_tokens: int | None) -> UnitUsage:
        """This unit as a model caching only prefixes of `min_tokens` or more would have
        used it (see the module's doc)."""
        if not min_tokens or self.cached_input_tokens >= min_tokens * max(self.calls, 1):
            return self
        return replace(self, cached_input_tokens=0, cache_write_tokens=0)

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cache_write_tokens=self.cache_write_tokens,
        )


@dataclass(frozen=True)
class RoleDemand:
    """One role of the new configuration: the model it calls, how many units it has and the
    earlier units it is forecast from (`basis` says where they came from, in words)."""

    role: str
    model: str
    units: int
    observed: Sequence[UnitUsage]
    basis: str = ""


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float | None = None  # None: one observed unit, the spread is unknown
    high: float | None = None


@dataclass(frozen=True)
class RoleForecast:
    role: str
    model: str
    units: int
    observed: int
    basis: str
    figures: dict[str, Interval]  # FIGURES; empty when nothing was observed
    cost: Interval | None  # None when the model has no price, or nothing was observed


@dataclass
class Forecast:
    roles: list[RoleForecast]
    cost: Interval | None  # the priced roles' total; None when no role is priced
    unpriced: list[str] = field(default_factory=list)  # models whose cost is unknown
    unobserved: list[str] = field(default_factory=list)  # roles no earlier unit shows
    source: str = ""  # the earlier job forecast from, in words
    method: str = METHOD

    @property
    def calls(self) -> float:
        return sum(role.figures["calls"].estimate for role in self.roles if role.figures)


def sum_interval(values: Sequence[float], units: int) -> Interval:
    """The forecast of the sum of `units` new draws like `values` (see the module's doc)."""
    n = len(values)
    if n == 0:
        raise ValueError("No observed unit to forecast from.")
    if units < 0:
        raise ValueError(f"A configuration cannot have {units} units.")
    mean = math.fsum(values) / n
    estimate = units * mean
    if n < 2:
        return Interval(estimate)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = student_t.ppf((1 + LEVEL) / 2, n - 1) * sd * math.sqrt(units + units * units / n)
    return Interval(estimate, max(estimate - half, 0.0), estimate + half)


def forecast(
    demands: Sequence[RoleDemand],
    price_of: Callable[[str], Price | None],
    *,
    batch: bool = False,
) -> Forecast:
    """Each role's calls, tokens and cost with their intervals, and the total cost; with
    `batch`, every call at its model's batch price (Price.batched)."""
    if batch:
        price_of = _batch_prices(price_of)
    roles = [_role_forecast(demand, price_of) for demand in demands]
    priced = [role.cost for role in roles if role.cost is not None]
    unpriced = [role.model for role in roles if role.figures and price_of(role.model) is None]
    return Forecast(
        roles=roles,
        cost=_added(priced) if priced else None,
        unpriced=list(dict.fromkeys(unpriced)),
        unobserved=[role.role for role in roles if not role.figures],
    )


def _batch_prices(price_of: Callable[[str], Price | None]) -> Callable[[str], Price | None]:
    def batch_price_of(model: str) -> Price | None:
        price = price_of(model)
        return None if price is None else price.batched()

    return batch_price_of


def _role_forecast(demand: RoleDemand, price_of) -> RoleForecast:
    price = price_of(demand.model)
    minimum = price.cache_min_tokens if price is not None else None
    observed = [unit.for_cache_minimum(minimum) for unit in demand.observed]
    figures, cost = {}, None
    if observed:
        figures = {
            name: sum_interval([getattr(unit, name) for unit in observed], demand.units)
            for name in FIGURES
        }
        if price is not None:
            costs = [float(price.cost(unit.usage())) for unit in observed]
            cost = sum_interval(costs, demand.units)
    return RoleForecast(
        role=demand.role,
        model=demand.model,
        units=demand.units,
        observed=len(observed),
        basis=demand.basis,
        figures=figures,
        cost=cost,
    )


def _added(intervals: Sequence[Interval]) -> Interval:
    estimate = math.fsum(i.estimate for i in intervals)
    if any(i.low is None for i in intervals):
        return Interval(estimate)
    return Interval(
        estimate, math.fsum(i.low for i in intervals), math.fsum(i.high for i in intervals)
    )


def as_dict(result: Forecast) -> dict:
    """The forecast as plain JSON values (the API's answer, the bench's print-out)."""
    return {
        "roles": [
            {
                "role": role.role,
                "model": role.model,
                "units": role.units,
                "observed_units": role.observed,
                "basis": role.basis,
                **{name: _interval_dict(role.figures.get(name)) for name in FIGURES},
                "cost_usd": _interval_dict(role.cost),
            }
            for role in result.roles
        ],
        "cost_usd": _interval_dict(result.cost),
        "unpriced": result.unpriced,
        "unobserved": result.unobserved,
        "source": result.source,
        "method": result.method,
    }


def _interval_dict(interval: Interval | None) -> dict | None:
    if interval is None:
        return None
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


def table_rows(result: Forecast) -> list[dict[str, str]]:
    """Each role as the page's and the command's table shows it, in words."""
    return [
        {
            "role": role.role,
            "model": role.model,
            "units": f"{role.units:,}",
            "calls": _count(role.figures.get("calls")),
            "input": _count(role.figures.get("input_tokens")),
            "cached": _count(role.figures.get("cached_input_tokens")),
            "output": _count(role.figures.get("output_tokens")),
            "cost": _cost_text(role),
            "basis": role.basis,
        }
        for role in result.roles
    ]


def page_context(result: Forecast) -> dict:
    """What the launch pages' forecast panel shows (templates/benchmark/_forecast.html)."""
    return {"forecast": result, "rows": table_rows(result), "total": total_text(result)}


def total_text(result: Forecast) -> str:
    if result.cost is None:
        if nothing_observed(result):
            return "unknown (no earlier calls to forecast from)"
        return "unknown (no role is priced)"
    text = money_text(result.cost)
    unknown = [*result.unpriced, *result.unobserved]
    if unknown:
        text += f" for the priced roles; unknown for {', '.join(unknown)}"
    return text


def nothing_observed(result: Forecast) -> bool:
    """Whether no role has an earlier unit: every figure of the forecast is unknown."""
    return not any(role.figures for role in result.roles)


def money_text(interval: Interval) -> str:
    if interval.low is None:
        return f"${interval.estimate:,.2f} (no interval: one unit observed)"
    return f"${interval.estimate:,.2f} [{_money(interval.low)}, {_money(interval.high)}]"


def text_table(result: Forecast) -> str:
    """The forecast as a plain-text table (the commands' --dry-run, the bench)."""
    heads = ["role", "model", "units", "calls", "input", "cached", "output", "cost [95%]"]
    keys = ["role", "model", "units", "calls", "input", "cached", "output", "cost"]
    rows = [[row[key] for key in keys] for row in table_rows(result)]
    widths = [max(len(str(cell)) for cell in column) for column in zip(heads, *rows, strict=False)]
    lines = [_line(heads, widths)] + [_line(row, widths) for row in rows]
    lines.append(f"total cost: {total_text(result)}")
    if result.source:
        lines.append(f"from: {result.source}")
    if result.unobserved:
        lines.append(f"no earlier calls to forecast from: {', '.join(result.unobserved)}")
    lines.append(f"interval: {result.method}")
    return "\n".join(lines)


def _line(cells, widths) -> str:
    return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=True))


def _cost_text(role: RoleForecast) -> str:
    if not role.figures:
        return "no earlier calls"
    if role.cost is None:
        return "unknown: no price"
    return money_text(role.cost)


def _count(interval: Interval | None) -> str:
    if interval is None:
        return "-"
    if interval.low is None:
        return f"{interval.estimate:,.0f}"
    return f"{interval.estimate:,.0f} [{interval.low:,.0f}-{interval.high:,.0f}]"


def _money(value: float | Decimal) -> str:
    return f"${value:,.2f}"
