"""Calibrating the jury to clinicians: does it work, and how fast is it?

A study of 1,200 conversations, 8 clinicians (3 on each conversation) and the 6 judged
rubrics, scored by two offline judges: the scripted "standard" judge and the "strict" one (one
point lower). The clinicians are the demo's simulated clinician (annotation/data/
simulated_clinician.yaml): the jury mean plus a known bias per rubric plus noise, rounded.

Measured, cross-fitted over 5 folds (no conversation's own clinician scores reach its score):
- the held-out mean bias (jury - clinicians) of the calibrated jury against the current one,
  summed over rubrics: the issue asks for a cut of at least 80%;
- the alternative annotator test: at least one rubric the calibrated jury passes and the
  current jury does not;
- the time to fit and evaluate every variant (the five numeric variants plus the examples
  variant, whose held-out scores follow the offline judge's rule for examples: shift its own
  score by the rounded mean of clinician minus own score over the fold's examples), with the
  learning curve: under 30 s.
And what a real calibration costs in judge calls.

Run directly (`python bench/bench_calibration.py`) or from bench/run_all.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alignment.engine import calibration  # noqa: E402
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE  # noqa: E402
from annotation.engine.simulated import simulated_clinician  # noqa: E402

CONVERSATIONS = 1_200
CLINICIANS = 8
PER_CONVERSATION = 3
JUDGES = ("offline/standard", "offline/strict")
RUBRICS = (
    "clinical_safety",
    "triage_quality",
    "clinical_helpfulness",
    "task_completion",
    "workflow_accuracy",
    "conversational_quality",
)
VARIANT = calibration.DEFAULT_VARIANT
TARGET_SECONDS = 30.0
TARGET_BIAS_CUT = 0.80
RESAMPLES = 1000
TIMEOUT = 600


def study(seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(judges_long, clinicians_long) of the simulated study."""
    rng = np.random.default_rng(seed)
    profile = simulated_clinician()
    items = np.arange(1, CONVERSATIONS + 1)
    judges, clinicians = [], []
    for rubric in RUBRICS:
        quality = rng.choice([2, 3, 4, 5], p=[0.15, 0.3, 0.35, 0.2], size=items.size)
        standard = np.clip(quality + rng.choice([-1, 0, 0, 0, 1], size=items.size), 1, 5)
        strict = np.clip(standard - 1, 1, 5)
        for judge, scores in zip(JUDGES, (standard, strict), strict=True):
            judges.append(
                pd.DataFrame({ITEM: items, RUBRIC: rubric, "judge_model": judge, SCORE: scores})
            )
        jury_mean = (standard + strict) / 2
        for seat in range(PER_CONVERSATION):
            raters = (items + seat * 3) % CLINICIANS
            value = jury_mean + profile.bias[rubric] + rng.normal(0, profile.noise_sd, items.size)
            scores = np.clip(np.round(value), 1, 5).astype(int)
            clinicians.append(
                pd.DataFrame({ITEM: items, RUBRIC: rubric, RATER: raters, SCORE: scores})
            )
    return pd.concat(judges, ignore_index=True), pd.concat(clinicians, ignore_index=True)


def examples_variant(judges_long, clinicians_long, folds) -> pd.DataFrame:
    """Held-out jury means of the examples variant under the offline judge's rule."""
    per_fold = calibration.fold_examples(clinicians_long, folds=folds)
    wide = judges_long.pivot_table(index=[ITEM, RUBRIC], columns="judge_model", values=SCORE)
    rows = []
    for (item, rubric), scores in wide.iterrows():
        examples = per_fold[folds[item]].examples(rubric)
        adjusted = []
        for judge in JUDGES:
            offset = np.mean(
                [e.score - wide.loc[(e.conversation_id, rubric), judge] for e in examples]
            )
            adjusted.append(np.clip(np.round(scores[judge] + offset), 1, 5))
        rows.append({ITEM: item, RUBRIC: rubric, JURY: float(np.mean(adjusted))})
    return pd.DataFrame(rows)


def measure() -> dict:
    judges_long, clinicians_long = study()
    started = time.perf_counter()
    folds = calibration.assign_folds(clinicians_long[ITEM].unique())
    held_out = {
        key: calibration.cross_fit(judges_long, clinicians_long, variant=key, folds=folds)
        for key, variant in calibration.VARIANTS.items()
        if not variant.needs_judging
    }
    held_out["examples"] = examples_variant(judges_long, clinicians_long, folds)
    figures = {
        key: calibration.evaluate(clinicians_long, jury, resamples=RESAMPLES)
        for key, jury in held_out.items()
    }
    curve = calibration.learning_curve(judges_long, clinicians_long, variant=VARIANT, folds=folds)
    for key in calibration.VARIANTS:
        if key not in ("current", "examples"):
            calibration.fit(judges_long, clinicians_long, variant=key)
    seconds = time.perf_counter() - started
    return {"figures": figures, "curve": curve, "seconds": seconds}


def bias(figures, key: str, rubric: str) -> float:
    return figures[key][rubric].agreement.mean_signed_diff.value


def summary(result: dict) -> tuple[list[dict], list[str]]:
    figures = result["figures"]
    lines = [f"{'rubric':24} {'variant':32} {'bias':>7} {'adjacent':>9} {'alpha':>7}  alt test"]
    for rubric in RUBRICS:
        for key, variant in calibration.VARIANTS.items():
            evaluation = figures[key][rubric]
            agreement = evaluation.agreement
            lines.append(
                f"{rubric:24} {variant.label:32} {agreement.mean_signed_diff.value:+7.2f} "
                f"{agreement.jury_adjacent.value:9.2f} {agreement.alpha_with_jury.value:7.2f}  "
                f"{evaluation.alt.verdict}"
            )
    current = sum(abs(bias(figures, "current", r)) for r in RUBRICS)
    calibrated = sum(abs(bias(figures, VARIANT, r)) for r in RUBRICS)
    cut = 1 - calibrated / current
    newly_passed = [
        r
        for r in RUBRICS
        if figures[VARIANT][r].alt.passed and not figures["current"][r].alt.passed
    ]
    curve = result["curve"]
    lines.append("learning curve (held-out adjacent agreement, mean over rubrics):")
    for size, rows in curve.groupby("n_train"):
        lines.append(f"  {size:5d} conversations: adjacent {rows['adjacent'].mean():.3f}, "
                     f"mean |difference| {rows['mean_abs_diff'].mean():.3f}")  # fmt: skip
    label = calibration.VARIANTS[VARIANT].label.lower()
    size = f"{CONVERSATIONS:,} conversations x {CLINICIANS} clinicians x {len(RUBRICS)} rubrics"
    rows = [
        {"name": f"held-out |bias| cut by {label} (sum over rubrics: {current:.2f} -> "
         f"{calibrated:.2f})", "measured": cut, "target": TARGET_BIAS_CUT, "unit": "share",
         "ok": cut >= TARGET_BIAS_CUT, "higher_is_better": True},
        {"name": f"rubrics passing the alternative annotator test only when calibrated "
         f"({', '.join(newly_passed) or 'none'})", "measured": len(newly_passed), "target": 1,
         "unit": "rubrics", "ok": len(newly_passed) >= 1, "higher_is_better": True},
        {"name": f"fit + cross-fitted evaluation of every variant + learning curve, {size}",
         "measured": result["seconds"], "target": TARGET_SECONDS, "unit": "s",
         "ok": result["seconds"] <= TARGET_SECONDS},
    ]  # fmt: skip
    return rows, lines


def run() -> list[dict]:
    rows, lines = summary(measure())
    print("\n".join(lines))
    calls = CONVERSATIONS * len(JUDGES) * len(RUBRICS)
    print(
        f"A real calibration's judge calls: the score maps and weights need none (they reuse the "
        f"jury's scores); the examples variant judges every held-out conversation once more "
        f"({CONVERSATIONS:,} x {len(JUDGES)} judges x {len(RUBRICS)} rubrics = {calls:,} calls), "
        f"and re-scoring the study with a promoted examples version as many again."
    )
    return rows


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
