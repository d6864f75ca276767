"""The alternative annotator test against a from-definition implementation (plain loops, exact
fractions, scipy's one-sample t-test, Benjamini-Yekutieli written out) on examples shaped like
the authors' experiments, and a hand-worked example."""

import math
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from alignment.engine.alt_test import (
    DESIGN_CONDITIONS,
    MAY_NOT_REPLACE,
    MAY_REPLACE,
    NOT_TESTED,
    alt_test,
    one_sided_p,
)
from alignment.engine.frames import ITEM, RATER, SCORE


def from_definition(rows, jury: dict, *, epsilon: float, min_items=30, q=0.05) -> dict:
    """The test as the paper states it, one clinician and one conversation at a time.
    jury: item -> Fraction (exact), so ties between alignments are decided exactly."""
    scores = defaultdict(dict)
    for item, rater, score in rows:
        scores[item][rater] = score
    raters = sorted({rater for _, rater, _ in rows})
    out = {}
    for j in raters:
        wins_jury, wins_own = [], []
        for item, by_rater in sorted(scores.items()):
            if j not in by_rater or item not in jury:
                continue
            others = [s for r, s in by_rater.items() if r != j]
            if not others:
                continue
            # Alignment = -RMSE; comparing mean squared differences decides the same way.
            jury_msd = sum((jury[item] - s) ** 2 for s in others) / len(others)
            own_msd = Fraction(sum((by_rater[j] - s) ** 2 for s in others), len(others))
            wins_jury.append(int(-jury_msd >= -own_msd))
            wins_own.append(int(-own_msd >= -jury_msd))
        if not wins_jury:
            continue
        entry = {"n": len(wins_jury), "rho_f": np.mean(wins_jury), "rho_h": np.mean(wins_own)}
        if len(wins_jury) >= min_items:
            d = np.array(wins_jury) - np.array(wins_own)
            if np.ptp(d) == 0:
                entry["p"] = 0.0 if d[0] > -epsilon else 1.0
            else:
                entry["p"] = stats.ttest_1samp(d, -epsilon, alternative="greater").pvalue
        out[j] = entry
    tested = sorted((r for r in out if "p" in out[r]), key=lambda r: out[r]["p"])
    m = len(tested)
    c = sum(1 / i for i in range(1, m + 1))
    running = 1.0
    for rank in range(m, 0, -1):  # BY: step-up, monotone from the largest p down
        rater = tested[rank - 1]
        running = min(running, out[rater]["p"] * m * c / rank, 1.0)
        out[rater]["adjusted"] = running
        out[rater]["rejected"] = running <= q
    omega = sum(out[r]["rejected"] for r in tested) / m if m else None
    aap = np.mean([out[r]["rho_f"] for r in tested]) if m else None
    return {"clinicians": out, "omega": omega, "aap": aap}


def published_style(*, n_items=60, n_clinicians=4, per_item=3, jury_noise=0.5, seed=0):
    """Like the authors' datasets: a few annotators, each item scored by several of them on a
    1-5 scale, and an LLM judge (here a 3-judge jury mean, so thirds) of a given noise."""
    rng = np.random.default_rng(seed)
    rows, jury = [], {}
    for item in range(n_items):
        quality = rng.uniform(1, 5)
        for rater in rng.choice(n_clinicians, size=per_item, replace=False):
            score = int(np.clip(np.rint(quality + rng.normal(0, 0.7)), 1, 5))
            rows.append((item, f"c{rater}", score))
        judges = np.clip(np.rint(quality + rng.normal(0, jury_noise, 3)), 1, 5).astype(int)
        jury[item] = Fraction(int(judges.sum()), 3)
    return rows, jury


def run(rows, jury, **options):
    frame = pd.DataFrame(rows, columns=[ITEM, RATER, SCORE])
    series = pd.Series({item: float(mean) for item, mean in jury.items()})
    return alt_test(frame, series, resamples=200, **options)


@pytest.mark.parametrize(
    ("noise", "epsilon", "seed"), [(0.4, 0.2, 0), (0.6, 0.1, 1), (1.6, 0.2, 2), (0.5, 0.0, 3)]
)
def test_it_equals_the_from_definition_implementation(noise, epsilon, seed):
    rows, jury = published_style(jury_noise=noise, seed=seed)
    result = run(rows, jury, epsilon=epsilon)
    expected = from_definition(rows, jury, epsilon=epsilon)
    assert {t.rater for t in result.clinicians} == set(expected["clinicians"])
    for test in result.clinicians:
        want = expected["clinicians"][test.rater]
        assert test.n_items == want["n"]
        assert test.jury_advantage.value == pytest.approx(want["rho_f"], abs=1e-14)
        assert test.clinician_advantage.value == pytest.approx(want["rho_h"], abs=1e-14)
        assert test.tested == ("p" in want)
        if test.tested:
            assert test.p_value == pytest.approx(want["p"], rel=1e-10, abs=1e-300)
            assert test.adjusted_p == pytest.approx(want["adjusted"], rel=1e-10)
            assert test.rejected == want["rejected"]
    assert result.winning_rate == pytest.approx(expected["omega"])
    assert result.advantage_probability.value == pytest.approx(expected["aap"], abs=1e-14)


def test_a_jury_close_to_the_clinicians_may_replace_one_and_a_noisy_one_may_not():
    close = run(*published_style(n_clinicians=3, jury_noise=0.3, seed=5), epsilon=0.2)
    assert close.passed and close.verdict == MAY_REPLACE and not close.needs
    assert close.winning_rate >= 0.5 and close.design_warning == ""
    noisy = run(*published_style(n_clinicians=3, jury_noise=2.5, seed=5), epsilon=0.2)
    assert not noisy.passed and noisy.verdict == MAY_NOT_REPLACE
    assert "winning rate" in noisy.reason
    assert noisy.advantage_probability.value < close.advantage_probability.value


def test_the_hand_worked_example():
    rows = [(1, "A", 3), (1, "B", 4), (1, "C", 4), (2, "A", 2), (2, "B", 2), (2, "C", 5)]
    result = run(rows, {1: Fraction(4), 2: Fraction(3)}, epsilon=0.2)
    by_rater = {t.rater: t for t in result.clinicians}
    # A out: the jury matches B and C exactly on 1 and is nearer on 2 -> the jury wins both.
    assert (by_rater["A"].jury_advantage.value, by_rater["A"].clinician_advantage.value) == (1, 0)
    # B out: on 1 the jury and B are both 1 point from A and equal to C (a tie counts for
    # both); on 2 the jury's mean square 2.5 beats B's 4.5.
    assert (by_rater["B"].jury_advantage.value, by_rater["B"].clinician_advantage.value) == (
        1,
        0.5,
    )
    assert (by_rater["C"].jury_advantage.value, by_rater["C"].clinician_advantage.value) == (
        1,
        0.5,
    )
    assert not any(t.tested for t in result.clinicians)  # two conversations each, 30 needed
    assert result.provisional and result.advantage_probability.value == 1.0


def test_a_design_too_small_says_what_would_be_needed():
    rows, jury = published_style(n_items=20, n_clinicians=2, per_item=2, seed=4)
    result = run(rows, jury, epsilon=0.2)
    assert result.verdict == NOT_TESTED and not result.passed and result.winning_rate is None
    assert result.design_warning == f"The design is short of {DESIGN_CONDITIONS}"
    text = " ".join(result.needs)
    assert "at least 3 clinicians" in text and "1 more" in text
    assert "raise the study's overlap to 3" in text
    assert "at least 30 conversations" in text and "10 more" in text


def test_the_authors_verdict_stands_beside_a_design_warning():
    # The independent check's case: winning rates of 0.57 and 0.67 (>= 0.5, the authors' pass)
    # showed "not passed" because of this project's own conditions (3 per conversation here).
    rows, jury = published_style(n_items=80, n_clinicians=4, per_item=2, jury_noise=0.2, seed=6)
    result = run(rows, jury, epsilon=0.2)
    assert result.winning_rate >= 0.5
    assert result.passed and result.verdict == MAY_REPLACE
    assert f"winning rate {result.winning_rate:.2f} >= 0.5" in result.reason
    assert result.design_warning == f"The design is short of {DESIGN_CONDITIONS}"
    assert any("overlap to 3" in need for need in result.needs)


def test_a_wider_margin_makes_the_jury_easier_to_accept():
    rows, jury = published_style(jury_noise=0.9, seed=7)
    strict = run(rows, jury, epsilon=0.0)
    lenient = run(rows, jury, epsilon=0.3)
    for a, b in zip(strict.clinicians, lenient.clinicians, strict=True):
        assert b.p_value < a.p_value


def test_identical_differences_give_p_zero_or_one():
    assert one_sided_p(np.zeros(40), 0.2) == 0.0  # mean 0 > -0.2
    assert one_sided_p(-np.ones(40), 0.2) == 1.0
    assert math.isclose(
        one_sided_p(np.array([1.0, 0.0, -1.0, 0.0] * 10), 0.1),
        stats.ttest_1samp([1.0, 0.0, -1.0, 0.0] * 10, -0.1, alternative="greater").pvalue,
    )


def test_the_advantage_probability_has_an_interval_and_its_n():
    rows, jury = published_style(seed=8)
    result = run(rows, jury, epsilon=0.2)
    aap = result.advantage_probability
    assert aap.low <= aap.value <= aap.high and aap.high > aap.low
    assert aap.n_items == 60 and aap.n_ratings == 180


def test_a_margin_outside_zero_to_one_is_refused():
    rows, jury = published_style(n_items=5, seed=9)
    with pytest.raises(ValueError, match="epsilon"):
        run(rows, jury, epsilon=1.5)
