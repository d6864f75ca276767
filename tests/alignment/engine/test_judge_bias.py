"""Judge bias diagnostics: slopes against scipy's linregress, the self-preference difference
against a pandas group mean, and the model-family file."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from alignment.engine.families import load_families, parse_families
from alignment.engine.frames import ITEM, JUDGE, SCORE
from alignment.engine.judge_bias import AGENT_MODEL, JURY_ROW, SELF_PREFERENCE, judge_bias

FAMILIES = load_families()
JUDGES = {0: "openai/gpt-4o", 1: "anthropic/claude-sonnet-4-5", 2: "offline/strict"}


def _study(n=80, seed=0, self_preference=0.8):
    rng = np.random.default_rng(seed)
    items = np.arange(n)
    agents = np.where(rng.random(n) < 0.5, "openai/gpt-4o-mini", "openai-compatible/qwen2.5:7b")
    turns = rng.integers(2, 14, n)
    characters = turns * rng.integers(150, 600, n)
    tools = rng.integers(0, 9, n)
    mean = pd.Series(rng.integers(1, 6, n).astype(float), index=items)
    rows = []
    for item in items:
        # Judge 0 is kinder to long conversations and to its own family.
        bonus = 0.15 * turns[item] + (self_preference if agents[item].startswith("openai/") else 0)
        for judge in JUDGES:
            raw = mean[item] + rng.normal(0, 0.7) + (bonus - 1 if judge == 0 else 0)
            rows.append((item, judge, int(np.clip(np.rint(raw), 1, 5))))
    judges = pd.DataFrame(rows, columns=[ITEM, JUDGE, SCORE])
    jury = judges.groupby(ITEM)[SCORE].mean()
    features = pd.DataFrame({ITEM: items, "turns": turns, "characters": characters,
                             "tool_calls": tools, AGENT_MODEL: agents})  # fmt: skip
    return judges, jury, mean, features


def _run(judges, jury, mean, features, **options):
    return judge_bias(judges, JUDGES, jury, mean, features, FAMILIES, resamples=300, **options)


def _figure(rows, judge, covariate):
    row = next(r for r in rows if r.judge == judge)
    return next(f for f in row.figures if f.covariate == covariate)


def test_each_slope_equals_least_squares_on_the_gaps():
    judges, jury, mean, features = _study()
    rows = _run(judges, jury, mean, features)
    wide = judges.pivot(index=ITEM, columns=JUDGE, values=SCORE)
    for judge in (0, 1, 2, JURY_ROW):
        gap = (jury if judge == JURY_ROW else wide[judge]) - mean
        for covariate, scale in (("turns", 1), ("characters", 1000), ("tool_calls", 1)):
            expected = stats.linregress(features[covariate] / scale, gap).slope
            figure = _figure(rows, judge, covariate).estimate
            assert figure.value == pytest.approx(expected, abs=1e-10), (judge, covariate)
            assert figure.n_items == 80 and figure.low < figure.value < figure.high


def test_a_length_bias_shows_as_a_positive_slope_whose_interval_excludes_zero():
    rows = _run(*_study(n=200, seed=1))
    biased = _figure(rows, 0, "turns").estimate
    assert biased.low > 0
    fair = _figure(rows, 1, "turns").estimate
    assert fair.low < 0 < fair.high


def test_self_preference_is_the_gap_on_own_family_minus_the_gap_on_others():
    judges, jury, mean, features = _study(n=200, seed=2)
    rows = _run(judges, jury, mean, features)
    gap = judges[judges[JUDGE] == 0].set_index(ITEM)[SCORE] - mean
    own = features.set_index(ITEM)[AGENT_MODEL].str.startswith("openai/")
    figure = _figure(rows, 0, SELF_PREFERENCE)
    assert figure.estimate.value == pytest.approx(gap[own].mean() - gap[~own].mean(), abs=1e-12)
    assert (figure.n_same, figure.n_other) == (int(own.sum()), int((~own).sum()))
    assert figure.estimate.low > 0  # judge 0 was built to favour its own family
    claude = _figure(rows, 1, SELF_PREFERENCE)  # no agent is a Claude
    assert claude.estimate.value is None and "of the judge's family" in claude.estimate.undefined


def test_an_offline_judge_has_no_family_and_says_so():
    rows = _run(*_study(n=30, seed=3))
    scripted = next(r for r in rows if r.judge == 2)
    assert scripted.family is None and "offline script" in scripted.family_note
    figure = _figure(rows, 2, SELF_PREFERENCE).estimate
    assert figure.value is None and "offline script" in figure.undefined
    assert _figure(rows, 2, "turns").estimate.value is not None  # length still applies


def test_a_covariate_that_does_not_vary_has_no_slope():
    judges, jury, mean, features = _study(n=20, seed=4)
    features["tool_calls"] = 3
    figure = _figure(_run(judges, jury, mean, features), 0, "tool_calls").estimate
    assert figure.value is None and "same tool calls" in figure.undefined


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("openai/gpt-4o-mini", "OpenAI GPT"),
        ("openai/o3-mini", "OpenAI GPT"),
        ("openai-compatible/gpt-oss-20b", "OpenAI GPT"),
        ("anthropic/claude-opus-4-1", "Anthropic Claude"),
        ("anthropic/some-future-name", "Anthropic Claude"),
        ("openai-compatible/meta-llama/Llama-3.1-8B-Instruct", "Meta Llama"),
        ("openai-compatible/llama3.1:8b", "Meta Llama"),
        ("openai-compatible/Qwen/Qwen2.5-72B", "Alibaba Qwen"),
        ("openai-compatible/mistralai/Mixtral-8x7B", "Mistral"),
        ("offline/careful", None),
        ("openai-compatible/some-new-model", None),
    ],
)
def test_model_strings_map_to_their_family(model, family):
    assert FAMILIES.family_of(model) == family


def test_scripted_models_are_never_the_same_family_even_as_each_other():
    assert FAMILIES.same_family("offline/strict", "offline/strict") is None
    assert FAMILIES.same_family("openai/gpt-4o", "openai/gpt-4o-mini") is True
    assert FAMILIES.same_family("openai/gpt-4o", "anthropic/claude-haiku-4-5") is False


def test_a_malformed_family_file_is_refused_with_the_entry_named():
    with pytest.raises(ValueError, match="family 2 .*matches nothing"):
        parse_families("families:\n  - {name: A, models: ['a*']}\n  - {name: B}\n")
    with pytest.raises(ValueError, match="used twice"):
        parse_families("families:\n  - {name: A, models: [a]}\n  - {name: A, models: [b]}\n")
