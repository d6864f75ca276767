"""Speed of the full agreement report (issues 11 and 22): every figure of every rubric with
1,000 bootstrap resamples of conversations.

A synthetic study of 1,200 conversations, 8 annotators and 6 rubrics, jury means of three
judges. Two shapes: every annotator scores every conversation (the worst case: 28 annotator
pairs, 57,600 ratings), and the paper's shape of three annotators per conversation. Each figure
is the best of a few wall-clock repeats, so one slow moment on a busy machine does not fail it.

"Every figure" is what the study report computes from the engine: the agreement table on the
sample and population-weighted (stratified bootstrap), the judges against each other (both
ways), the alternative annotator test, the clinician-corrected scores per model, the judge
bias diagnostics and each annotator's quality overall and by week. The table alone (the
issue 11 figure) is reported beside it.

Run directly (`python bench/bench_alignment.py`) or through bench/run_all.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alignment.engine import design  # noqa: E402
from alignment.engine.agreement import agreement_table  # noqa: E402
from alignment.engine.alt_test import alt_test  # noqa: E402
from alignment.engine.annotators import OVERALL, PERIOD, annotator_quality  # noqa: E402
from alignment.engine.families import load_families  # noqa: E402
from alignment.engine.frames import (  # noqa: E402
    ITEM,
    JUDGE,
    JURY,
    RATER,
    RUBRIC,
    SCORE,
    STRATUM,
    WEIGHT,
)
from alignment.engine.judge_bias import AGENT_MODEL, judge_bias  # noqa: E402
from alignment.engine.judges import judge_agreement  # noqa: E402
from alignment.engine.ppi import Annotated, Population, corrected_score  # noqa: E402

CONVERSATIONS = 1200
ANNOTATORS = 8
RUBRICS = 6
JUDGES = 3
RESAMPLES = 1000
REPEATS = 3
TARGET_SECONDS = 5.0
MODELS = ("openai/gpt-4o-mini", "openai-compatible/qwen2.5:7b")
JUDGE_MODELS = {0: "openai/gpt-4o", 1: "anthropic/claude-sonnet-4-5", 2: "offline/standard"}
WEEKS = 6


def synthetic_study(annotators_per_item: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Clinician ratings (with the week they were given), judge scores and jury means around
    a latent 1-5 quality per conversation; the sampling design (weight, the conversation's
    cell per rubric) and the conversations' length, tool calls and agent model."""
    rng = np.random.default_rng(seed)
    clinicians, jury, judges, design = [], [], [], []
    models = rng.integers(0, len(MODELS), CONVERSATIONS)
    weights = 1 / rng.uniform(0.02, 1.0, CONVERSATIONS)
    for rubric in range(RUBRICS):
        quality = rng.uniform(1, 5, CONVERSATIONS)
        for item in range(CONVERSATIONS):
            raters = rng.choice(ANNOTATORS, size=annotators_per_item, replace=False)
            noisy = np.clip(np.rint(quality[item] + rng.normal(0, 0.8, len(raters))), 1, 5)
            clinicians += [(item, f"rubric {rubric}", f"annotator {r}", int(s),
                            f"week {(item + r) % WEEKS}")
                           for r, s in zip(raters, noisy, strict=True)]  # fmt: skip
        scores = np.clip(
            np.rint(quality[:, None] + rng.normal(-0.3, 0.9, (CONVERSATIONS, JUDGES))), 1, 5
        )
        jury += [(item, f"rubric {rubric}", mean) for item, mean in enumerate(scores.mean(axis=1))]
        judges += [(item, f"rubric {rubric}", j, int(scores[item, j]))
                   for item in range(CONVERSATIONS) for j in range(JUDGES)]  # fmt: skip
        bins = np.clip(np.floor(scores.mean(axis=1) + 0.5), 1, 5).astype(int)
        design += [(item, f"rubric {rubric}", weights[item], f"{models[item]}|{bins[item]}")
                   for item in range(CONVERSATIONS)]  # fmt: skip
    turns = rng.integers(2, 15, CONVERSATIONS)
    return {
        "clinicians": pd.DataFrame(clinicians, columns=[ITEM, RUBRIC, RATER, SCORE, PERIOD]),
        "jury": pd.DataFrame(jury, columns=[ITEM, RUBRIC, JURY]),
        "judges": pd.DataFrame(judges, columns=[ITEM, RUBRIC, JUDGE, SCORE]),
        "design": pd.DataFrame(design, columns=[ITEM, RUBRIC, WEIGHT, STRATUM]),
        "features": pd.DataFrame(
            {
                ITEM: np.arange(CONVERSATIONS),
                "turns": turns,
                "characters": turns * rng.integers(200, 700, CONVERSATIONS),
                "tool_calls": rng.integers(0, 12, CONVERSATIONS),
                AGENT_MODEL: [MODELS[m] for m in models],
            }
        ),  # fmt: skip
    }


def agreement_only(study: dict) -> None:
    agreement_table(study["clinicians"][[ITEM, RUBRIC, RATER, SCORE]], study["jury"],
                    resamples=RESAMPLES, seed=0)  # fmt: skip


def every_figure(study: dict) -> None:
    """The engine work of one study report, as alignment.services.reports does it."""
    clinicians = study["clinicians"][[ITEM, RUBRIC, RATER, SCORE]]
    jury, judges, design = study["jury"], study["judges"], study["design"]
    for design_long in (None, design):
        agreement_table(clinicians, jury, resamples=RESAMPLES, seed=0, design_long=design_long)
    families = load_families()
    means = clinicians.groupby([RUBRIC, ITEM])[SCORE].mean()
    for rubric, rated in clinicians.groupby(RUBRIC):
        own_jury = jury[jury[RUBRIC] == rubric].set_index(ITEM)[JURY]
        own_judges = judges[judges[RUBRIC] == rubric][[ITEM, JUDGE, SCORE]]
        own_design = design[design[RUBRIC] == rubric]
        mean = means.loc[rubric]
        for weighting in (None, own_design):
            judge_agreement(own_judges, mean, resamples=RESAMPLES, seed=0, design=weighting)
        alt_test(rated[[ITEM, RATER, SCORE]], own_jury, resamples=RESAMPLES, seed=0)
        judge_bias(own_judges, JUDGE_MODELS, own_jury, mean, study["features"], families,
                   resamples=RESAMPLES, seed=0)  # fmt: skip
        _corrected(mean, own_jury, own_design, study["features"])
    annotator_quality(study["clinicians"].assign(**{PERIOD: OVERALL}), jury,
                      resamples=RESAMPLES, seed=0)  # fmt: skip
    annotator_quality(study["clinicians"], jury, resamples=RESAMPLES, seed=0)


def _corrected(mean, jury, design, features) -> None:
    models = features.set_index(ITEM)[AGENT_MODEL].reindex(mean.index)
    table = design.set_index(ITEM).reindex(mean.index)
    for model in MODELS:
        own = (models == model).to_numpy()
        # The unannotated population: ten conversations like each annotated one.
        population_jury = jury[own]
        population = Population(
            n=10 * len(population_jury),
            jury_sum=10 * float(population_jury.sum()),
            jury_squares=10 * float((population_jury**2).sum()),
            passed=10 * int((population_jury >= 3).sum()),
        )
        annotated = Annotated(
            mean[own].to_numpy(), jury[own].to_numpy(), (mean[own] >= 3).to_numpy(),
            (jury[own] >= 3).to_numpy(), table[WEIGHT][own].to_numpy(),
            table[STRATUM][own].to_numpy(), int(own.sum()) * 3,
        )  # fmt: skip
        corrected_score(population, annotated)


def _best_of(work, study: dict) -> float:
    timings = []
    for _ in range(REPEATS):
        design.forget_draws()  # each repeat is a first report: no resamples drawn yet
        started = time.perf_counter()
        work(study)
        timings.append(time.perf_counter() - started)
    return min(timings)


def run() -> list[dict]:
    rows = []
    for per_item, shape in ((ANNOTATORS, "all 8 per conversation"), (3, "3 of 8 per conversation")):
        study = synthetic_study(per_item)
        for work, what in ((agreement_only, "agreement table"), (every_figure, "every figure")):
            measured = _best_of(work, study)
            name = (f"agreement report ({what}) {CONVERSATIONS:,} conv x {RUBRICS} rubrics, "
                    f"{shape}, {RESAMPLES:,} resamples")  # fmt: skip
            rows.append({"name": name, "measured": measured, "target": TARGET_SECONDS,
                         "unit": "s", "goal": "<=", "ok": measured <= TARGET_SECONDS})  # fmt: skip
    return rows


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
