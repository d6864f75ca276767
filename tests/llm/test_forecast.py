"""The forecast's arithmetic (llm.engine.forecast): a hand computation, a simulation of its
coverage, and the rules for unpriced and unobserved roles."""

import math
from decimal import Decimal

import numpy as np
import pytest

from llm.engine.forecast import (
    RoleDemand,
    UnitUsage,
    forecast,
    sum_interval,
    text_table,
)
from llm.engine.providers.catalog import Price

PRICE = Price(Decimal("2"), Decimal("10"), cached_input_per_million=Decimal("0.5"))


def test_the_interval_matches_a_hand_computation():
    # mean 3, sd sqrt(2.5), t(0.975, 4) = 2.776445; half-width t * sd * sqrt(10 + 100 / 5)
    result = sum_interval([1, 2, 3, 4, 5], 10)
    half = 2.776445 * math.sqrt(2.5) * math.sqrt(30)
    assert result.estimate == 30
    assert result.low == pytest.approx(30 - half, rel=1e-5)
    assert result.high == pytest.approx(30 + half, rel=1e-5)


def test_the_low_end_is_cut_at_zero():
    assert sum_interval([0, 0, 0, 100], 2).low == 0.0


def test_one_observed_unit_gives_no_interval():
    result = sum_interval([7], 3)
    assert (result.estimate, result.low, result.high) == (21, None, None)


def test_no_observed_unit_is_refused():
    with pytest.raises(ValueError, match="No observed unit"):
        sum_interval([], 3)


def test_the_interval_covers_the_true_sum_about_95_percent_of_the_time():
    # Pilots of 20 skewed units forecast runs of 400: the interval must cover the run's
    # actual sum close to 95% of the time (the mean's uncertainty included).
    rng = np.random.default_rng(7)
    trials, pilot, units = 2000, 20, 400
    covered = 0
    for _ in range(trials):
        observed = rng.gamma(2.0, 500.0, pilot)
        actual = rng.gamma(2.0, 500.0, units).sum()
        interval = sum_interval(list(observed), units)
        covered += interval.low <= actual <= interval.high
    assert 0.92 <= covered / trials <= 0.98


def test_a_normal_interval_of_the_sum_alone_would_cover_far_less():
    # Why the N^2/n term: without it a pilot of 20 forecasting 400 units is overconfident.
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(1000):
        observed = rng.gamma(2.0, 500.0, 20)
        actual = rng.gamma(2.0, 500.0, 400).sum()
        half = 1.96 * observed.std(ddof=1) * math.sqrt(400)
        covered += abs(400 * observed.mean() - actual) <= half
    assert covered / 1000 < 0.5


def test_cost_is_priced_per_unit_with_cached_tokens_at_their_rate():
    units = [
        UnitUsage(calls=2, input_tokens=1000, output_tokens=100, cached_input_tokens=800),
        UnitUsage(calls=2, input_tokens=1000, output_tokens=100, cached_input_tokens=800),
    ]
    result = forecast([RoleDemand("judge 1", "openai/x", 1000, units)], lambda _: PRICE)
    # per unit: 200 x $2 + 800 x $0.5 + 100 x $10 per million = $0.0018
    role = result.roles[0]
    assert role.cost.estimate == pytest.approx(1.8)
    assert role.figures["calls"].estimate == 2000
    assert role.figures["cached_input_tokens"].estimate == 800_000
    assert result.cost.estimate == pytest.approx(1.8)


def test_an_unpriced_model_is_named_and_never_counted_as_free():
    observed = [UnitUsage(1, 100, 10), UnitUsage(1, 120, 12)]
    demands = [
        RoleDemand("agent", "openai/priced", 10, observed),
        RoleDemand("patient", "mystery/model", 10, observed),
    ]
    prices = {"openai/priced": PRICE}
    result = forecast(demands, prices.get)
    assert result.unpriced == ["mystery/model"]
    assert result.roles[1].cost is None
    assert result.cost.estimate == pytest.approx(result.roles[0].cost.estimate)
    table = text_table(result)
    assert "unknown: no price" in table
    assert "unknown for mystery/model" in table


def test_a_role_with_no_earlier_calls_is_said_so():
    result = forecast([RoleDemand("roster", "openai/priced", 10, [])], lambda _: PRICE)
    assert result.unobserved == ["roster"]
    assert result.cost is None
    assert "no earlier calls" in text_table(result)
    assert "total cost: unknown (no earlier calls to forecast from)" in text_table(result)


def test_the_total_names_the_roles_it_leaves_out():
    observed = [UnitUsage(1, 100, 10), UnitUsage(1, 120, 12)]
    demands = [RoleDemand("agent", "m", 10, observed), RoleDemand("roster", "m", 10, [])]
    result = forecast(demands, lambda _: PRICE)
    assert "for the priced roles; unknown for roster" in text_table(result)


def test_the_total_interval_adds_the_roles_ends():
    observed = [UnitUsage(1, 100, 10), UnitUsage(1, 300, 30)]
    demands = [RoleDemand(name, "m", 50, observed) for name in ("agent", "patient")]
    result = forecast(demands, lambda _: PRICE)
    one = result.roles[0].cost
    assert result.cost.low == pytest.approx(2 * one.low)
    assert result.cost.high == pytest.approx(2 * one.high)


def test_a_model_caching_only_longer_prefixes_is_forecast_without_the_short_reads():
    # Two judge calls that read a 1,200-token rubric prefix each, and a conversation whose
    # four calls read 2,000 tokens each on average.
    judge = UnitUsage(calls=1, input_tokens=5000, cached_input_tokens=1200, cache_write_tokens=50)
    talk = UnitUsage(calls=4, input_tokens=12000, cached_input_tokens=8000, cache_write_tokens=900)
    short_prefixes = Price(
        Decimal("1"), Decimal("5"), Decimal("0.1"), Decimal("1.25"), cache_min_tokens=4096
    )
    usual = Price(Decimal("1"), Decimal("5"), Decimal("0.1"), Decimal("1.25"))
    demands = [
        RoleDemand("judge", "small", 10, [judge, judge]),
        RoleDemand("talk", "big", 1, [talk]),
    ]
    for_small = forecast(demands, {"small": short_prefixes, "big": usual}.get)
    for_usual = forecast(demands, {"small": usual, "big": usual}.get)

    judge_small, talk_big = for_small.roles
    assert judge_small.figures["cached_input_tokens"].estimate == 0
    assert judge_small.figures["cache_write_tokens"].estimate == 0
    assert judge_small.cost.estimate == pytest.approx(10 * 5000 / 1e6)  # every token at 1.00
    assert for_usual.roles[0].figures["cached_input_tokens"].estimate == 12000
    assert talk_big.figures["cached_input_tokens"].estimate == 8000  # 2,000 a call: kept
    # The same conversation at a 4,096-token minimum reads too little a call to count.
    talk_small = forecast([RoleDemand("talk", "small", 1, [talk])], {"small": short_prefixes}.get)
    assert talk_small.roles[0].figures["cached_input_tokens"].estimate == 0
