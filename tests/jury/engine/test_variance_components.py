"""Variance components (jury.engine.variance) against statsmodels' mixed model, against the
components a simulation was drawn from, and on designs that cannot tell every component apart;
the decision study (jury.engine.decision) against its definition and a simulation."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from jury.engine import decision, variance

TRUE = {"case": 0.5, "repetition": 0.3, "judge": 0.1, "case_judge": 0.05, "residual": 0.2}


def simulate(cases=200, repetitions=4, judges=3, seed=1, short=0.0, truth=TRUE) -> pd.DataFrame:
    """Scores drawn from the crossed model; a share `short` of cases is met fewer times."""
    rng = np.random.default_rng(seed)
    sd = {name: math.sqrt(value) for name, value in truth.items()}
    case = rng.normal(0, sd["case"], cases)
    judge = rng.normal(0, sd["judge"], judges)
    case_judge = rng.normal(0, sd["case_judge"], (cases, judges))
    met = np.where(
        rng.random(cases) < short, rng.integers(1, max(repetitions, 2), cases), repetitions
    )
    rows = []
    for index in range(cases):
        for repetition in range(met[index]):
            encounter = rng.normal(0, sd["repetition"])
            noise = rng.normal(0, sd["residual"], judges)
            scores = 3 + case[index] + encounter + judge + case_judge[index] + noise
            conversation = f"{index}-{repetition}"
            rows += [(index, conversation, f"judge {k}", s) for k, s in enumerate(scores)]
    return pd.DataFrame(rows, columns=["case", "conversation", "judge", "score"])


def statsmodels_reml(frame: pd.DataFrame) -> dict[str, float]:
    import statsmodels.formula.api as smf

    vc = {
        "case": "0 + C(case)",
        "repetition": "0 + C(conversation)",
        "judge": "0 + C(judge)",
        "case_judge": "0 + C(case):C(judge)",
    }
    model = smf.mixedlm(
        "score ~ 1", frame.assign(whole=1), groups="whole", re_formula="0", vc_formula=vc
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model.fit(reml=True, method=["lbfgs"])
    found = dict(zip(model.exog_vc.names, fitted.vcomp, strict=True))
    return {**found, "residual": fitted.scale}


def test_reml_matches_statsmodels_mixed_model_on_an_unbalanced_design():
    frame = simulate(
        cases=40, repetitions=3, seed=5, short=0.4, truth={**TRUE, "judge": 0.2, "case_judge": 0.1}
    )
    design = variance.design_from_scores(frame)
    assert not design.balanced

    ours = variance.estimate(design)
    theirs = statsmodels_reml(frame)

    for name in variance.COMPONENTS:
        assert ours.variance[name] == pytest.approx(theirs[name], rel=5e-3, abs=1e-4), name
    assert ours.method == "REML (unbalanced)"


@pytest.mark.parametrize("short", [0.0, 0.4])
def test_known_components_are_recovered_within_their_intervals(short):
    frame = simulate(cases=600, repetitions=4, judges=6, seed=11, short=short)

    result = variance.estimate(variance.design_from_scores(frame))

    for name, value in TRUE.items():
        assert result.low[name] <= value <= result.high[name], (name, result.variance[name])
        assert result.low[name] <= result.variance[name] <= result.high[name]
    shares = [result.share[name] for name in variance.COMPONENTS]
    assert sum(shares) == pytest.approx(1.0)
    assert result.share_low["case"] < result.share["case"] < result.share_high["case"]


def test_on_a_balanced_design_reml_is_the_anova_estimate():
    frame = simulate(cases=150, repetitions=3, seed=3)
    design = variance.design_from_scores(frame)
    assert design.balanced

    start = variance.anova_start(design)
    assert np.all(start > 0)  # no estimate clipped at zero, so REML and ANOVA coincide
    searched = variance.maximise(design, start * [1.5, 0.5, 2.0, 0.7, 1.3], np.full(5, True))

    assert list(searched) == pytest.approx(list(start), rel=1e-3)
    result = variance.estimate(design)
    assert [result.variance[name] for name in variance.COMPONENTS] == pytest.approx(list(start))


def test_the_judge_contrasts_are_orthonormal_and_sum_to_zero():
    contrasts = variance.helmert(5)

    assert contrasts @ contrasts.T == pytest.approx(np.eye(4))
    assert contrasts.sum(axis=1) == pytest.approx(np.zeros(4))


def test_one_judge_cannot_tell_judges_apart_and_says_so():
    frame = simulate(cases=80, judges=1, seed=2)

    result = variance.estimate(variance.design_from_scores(frame))

    for name in ("judge", "case_judge", "residual"):
        assert math.isnan(result.variance[name]) and math.isnan(result.share[name])
    assert result.variance["case"] > 0 and result.variance["repetition"] > 0
    assert result.share["case"] + result.share["repetition"] == pytest.approx(1.0)


def test_one_repetition_folds_the_repetition_into_the_case_and_case_judge_into_the_residual():
    frame = simulate(cases=400, repetitions=1, seed=4)

    result = variance.estimate(variance.design_from_scores(frame))

    assert math.isnan(result.variance["repetition"]) and math.isnan(result.variance["case_judge"])
    case = TRUE["case"] + TRUE["repetition"]
    assert result.low["case"] <= case <= result.high["case"]
    residual = TRUE["residual"] + TRUE["case_judge"]
    assert result.low["residual"] <= residual <= result.high["residual"]


def test_conversations_missing_a_judge_are_left_out():
    frame = simulate(cases=30, seed=6)
    partial = frame.drop(frame.index[0])  # the first conversation lost one judge's score

    design = variance.design_from_scores(partial)

    assert design.conversations == frame["conversation"].nunique() - 1


def test_the_table_has_a_row_per_model_measure_and_component():
    frame = pd.concat(
        [
            simulate(cases=30, seed=seed).assign(model=f"m{seed}", measure="aggregate")
            for seed in (1, 2)
        ]
    )

    table = variance.components_table(frame)

    assert list(table.columns) == variance.COLUMNS
    assert len(table) == 2 * len(variance.COMPONENTS)
    assert set(table["n_judges"]) == {3} and set(table["n_cases"]) == {30}


# --- the decision study --------------------------------------------------------------------


def test_the_error_variance_of_a_mean_matches_a_simulation_of_it():
    rng = np.random.default_rng(8)
    cases, repetitions, judges, draws = 20, 3, 2, 20_000
    sd = {name: math.sqrt(value) for name, value in TRUE.items()}
    # The grand mean of each simulated run, drawn term by term from the model's definition.
    means = (
        rng.normal(0, sd["case"], (draws, cases)).mean(axis=1)
        + rng.normal(0, sd["repetition"], (draws, cases * repetitions)).mean(axis=1)
        + rng.normal(0, sd["judge"], (draws, judges)).mean(axis=1)
        + rng.normal(0, sd["case_judge"], (draws, cases * judges)).mean(axis=1)
        + rng.normal(0, sd["residual"], (draws, cases * repetitions * judges)).mean(axis=1)
    )

    predicted = decision.error_variance(TRUE, cases, repetitions, judges)

    assert np.var(means) == pytest.approx(predicted, rel=0.05)


def test_cases_needed_is_the_fewest_that_reach_the_target():
    allowed = decision.target_error(half_width=0.5)

    cases = decision.cases_needed(TRUE, repetitions=2, judges=3, allowed_error=allowed)

    assert decision.error_variance(TRUE, cases, 2, 3) <= allowed
    assert decision.error_variance(TRUE, cases - 1, 2, 3) > allowed


def test_a_half_width_below_the_judge_term_is_out_of_reach():
    judge_alone = decision.Z * math.sqrt(TRUE["judge"] / 1)

    assert decision.cases_needed(TRUE, 4, 1, decision.target_error(half_width=judge_alone)) is None
    assert decision.cases_needed(TRUE, 4, 5, decision.target_error(half_width=judge_alone)) > 0


def test_the_coefficient_needs_two_models():
    assert math.isnan(decision.between_model_variance([3.1], [0.01]))
    between = decision.between_model_variance([3.0, 3.4, 3.8], [0.01, 0.01, 0.01])
    assert between == pytest.approx(0.16 - 0.01)
    assert decision.coefficient(between, 0.0375) == pytest.approx(0.8)
    assert decision.target_error(goal=0.8, between=between) == pytest.approx(0.0375)
    assert math.isnan(decision.target_error(goal=0.8, between=math.nan))


def test_plans_are_cheapest_first_and_each_reaches_the_target():
    costs = decision.Costs(conversation=0.05, judge=0.02)
    allowed = decision.target_error(half_width=0.45)

    found = decision.plans(TRUE, math.nan, costs, allowed)

    assert found and {plan.judges for plan in found} >= {3, 4, 5}

    assert [plan.cost for plan in found] == sorted(plan.cost for plan in found)
    for plan in found:
        assert plan.half_width <= 0.45 + 1e-12
        per_conversation = 0.05 + plan.judges * 0.02
        assert plan.cost == pytest.approx(plan.cases * plan.repetitions * per_conversation)


@pytest.mark.parametrize("bad", [{"half_width": 0}, {"goal": 1.2}, {}])
def test_a_target_out_of_range_is_refused(bad):
    with pytest.raises(ValueError):
        decision.target_error(**bad)


def scores_of(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["case", "conversation", "judge", "score"])
    return frame.assign(model="m", measure="aggregate")


def test_a_single_case_has_no_case_part_and_a_run_without_spread_no_shares():
    one_case = scores_of([(1, f"c{r}", f"j{k}", float(r + k)) for r in range(3) for k in range(2)])
    alike = scores_of(
        [(i, f"c{i}-{r}", f"j{k}", 3.0) for i in range(4) for r in range(2) for k in range(2)]
    )  # noqa: E501

    single = variance.components_table(one_case).set_index("component")
    flat = variance.components_table(alike).set_index("component")

    assert math.isnan(single.loc["case", "variance"])
    assert single.loc["repetition", "variance"] > 0
    assert single["share"].dropna().sum() == pytest.approx(1.0)
    assert flat["variance"].fillna(0).eq(0).all() and flat["share"].isna().all()
