"""pass^k and the expected worst of k, checked against their definitions by enumerating every
k-subset of each case's encounters (jury.engine.reliability)."""

import itertools
import random
from statistics import mean

import numpy as np
import pandas as pd
import pytest

from jury.engine import reliability
from jury.engine.reliability import CaseOutcomes, curve, reliability_table


def enumerated(cases, k):
    """pass^k and worst-of-k from their definitions: every k-subset of a case, equally likely."""
    passes, worsts = [], []
    for case in cases:
        if len(case.scores) < k:
            continue
        subsets = list(itertools.combinations(range(len(case.scores)), k))
        passes.append(mean(all(case.passed[i] for i in subset) for subset in subsets))
        worsts.append(mean(min(case.scores[i] for i in subset) for subset in subsets))
    return mean(passes), mean(worsts)


def random_cases(seed, count=12, sizes=(3, 4, 5)):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        scores = tuple(
            rng.choice([1.0, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0]) for _ in range(rng.choice(sizes))
        )
        cases.append(CaseOutcomes(scores, tuple(score >= 3 for score in scores)))
    return cases


@pytest.mark.parametrize("seed", range(6))
def test_the_estimates_match_their_definition_on_enumerable_cases(seed):
    cases = random_cases(seed)
    table = curve(cases, 5, resamples=200)
    for k in range(1, 6):
        expected_pass, expected_worst = enumerated(cases, k)
        row = table.iloc[k - 1]
        assert row["pass_hat_k"] == pytest.approx(expected_pass)
        assert row["worst_of_k"] == pytest.approx(expected_worst)
        assert row["n_cases"] == sum(len(case.scores) >= k for case in cases)


def test_pass_at_one_is_the_pass_rate_and_the_curve_never_rises():
    cases = random_cases(9, sizes=(4,))
    table = curve(cases, 4, resamples=200)
    rate = np.mean([mean(case.passed) for case in cases])
    assert table["pass_hat_k"].iloc[0] == pytest.approx(rate)
    assert (np.diff(table["pass_hat_k"]) <= 1e-12).all()
    assert (np.diff(table["worst_of_k"]) <= 1e-12).all()


def test_a_case_that_passes_four_times_in_five_is_far_from_safe_at_k_4():
    # 4 of 5: passes 80% of single encounters, but only C(4,4)/C(5,4) = 20% of four in a row.
    table = curve([CaseOutcomes((4, 4, 4, 4, 2), (True,) * 4 + (False,))], 4, resamples=50)
    assert table["pass_hat_k"].tolist() == pytest.approx([0.8, 0.6, 0.4, 0.2])
    # The 2 is among four encounters 80% of the time.
    assert table["worst_of_k"].iloc[3] == pytest.approx(4 * 0.2 + 2 * 0.8)


def test_the_interval_resamples_cases_and_holds_the_estimate():
    cases = random_cases(3, count=40, sizes=(4,))
    table = curve(cases, 4)
    assert ((table["low"] <= table["pass_hat_k"]) & (table["pass_hat_k"] <= table["high"])).all()
    again = curve(cases, 4)
    assert table.equals(again)  # a fixed seed: the same interval every time


def test_the_table_has_a_row_per_model_measure_stratum_and_k():
    rows = []
    for model, case, repetition in itertools.product(["a", "b"], range(6), range(4)):
        score = 4.0 if (case + repetition) % 3 else 2.0
        personality = "anxious" if case % 2 else "calm"
        rows.append({"model": model, "measure": "aggregate", "case": case, "score": score,
                     "passed": score >= 3, "personality": personality})  # fmt: skip
    table = reliability_table(pd.DataFrame(rows), strata=["personality"], k_max=4, resamples=100)

    assert list(table.columns) == reliability.COLUMNS
    assert set(table["stratum"]) == {"all", "personality=anxious", "personality=calm"}
    assert len(table) == 2 * 3 * 4
    calm = table[(table.model == "a") & (table.stratum == "personality=calm") & (table.k == 1)]
    assert calm["n_cases"].item() == 3


def test_an_empty_group_has_no_rows():
    empty = pd.DataFrame(columns=["model", "measure", "case", "score", "passed"])
    assert reliability_table(empty, strata=[], k_max=3).empty
