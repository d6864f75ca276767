"""Intervals that respect the design: with 4 repetitions of each case and scores that move
together within a case, the report's intervals (a case is one cluster) cover the true mean and
pass rate at about their nominal 95%, where intervals that count every conversation as
independent do not. Seeded simulation, so the figures are the same on every run."""

import numpy as np
import pandas as pd

from jury.engine.stats import model_table

CASES, REPETITIONS, SIMULATIONS = 30, 4, 200
TRUE_MEAN, CASE_SD, NOISE_SD = 3.5, 0.8, 0.3  # most of the spread is the case's
TRUE_PASS = 0.7


def simulated(rng):
    case = np.repeat(np.arange(CASES), REPETITIONS)
    aggregate = TRUE_MEAN + rng.normal(0, CASE_SD, CASES)[case] + rng.normal(0, NOISE_SD, case.size)
    # Each case passes with its own chance (mean TRUE_PASS); its repetitions share it.
    chance = rng.beta(TRUE_PASS * 2, (1 - TRUE_PASS) * 2, CASES)[case]
    passed = rng.random(case.size) < chance
    conversations = pd.DataFrame({"model": "m", "case": case, "aggregate": aggregate})
    rubric_scores = pd.DataFrame(
        {"model": "m", "case": case, "rubric": "r", "score": aggregate, "passed": passed}
    )
    return rubric_scores, conversations


def coverage(clustered: bool) -> tuple[float, float]:
    rng = np.random.default_rng(2026)
    mean_hits = pass_hits = 0
    for _ in range(SIMULATIONS):
        rubric_scores, conversations = simulated(rng)
        if not clustered:  # every conversation its own case: the old intervals
            rubric_scores, conversations = (
                frame.drop(columns="case") for frame in (rubric_scores, conversations)
            )
        row = model_table(rubric_scores, conversations).loc["m"]
        mean_hits += row["aggregate_low"] <= TRUE_MEAN <= row["aggregate_high"]
        pass_hits += row["r_pass_low"] <= TRUE_PASS <= row["r_pass_high"]
    return mean_hits / SIMULATIONS, pass_hits / SIMULATIONS


def test_intervals_over_cases_cover_at_their_nominal_rate_and_naive_ones_do_not():
    clustered_mean, clustered_pass = coverage(clustered=True)
    naive_mean, naive_pass = coverage(clustered=False)

    assert 0.90 <= clustered_mean <= 0.99, clustered_mean
    assert 0.90 <= clustered_pass <= 0.99, clustered_pass
    assert naive_mean < 0.85 and naive_pass < 0.85, (naive_mean, naive_pass)


def test_one_conversation_per_case_gives_the_textbook_intervals():
    rng = np.random.default_rng(3)
    rubric_scores, conversations = simulated(rng)
    single = conversations.drop_duplicates("case")
    single_scores = rubric_scores.drop_duplicates("case")
    with_case = model_table(single_scores, single)
    without = model_table(single_scores.drop(columns="case"), single.drop(columns="case"))
    pd.testing.assert_frame_equal(with_case, without)
