"""Speed of the full agreement report (issue 11): every figure of every rubric with 1,000
bootstrap resamples of conversations.

A synthetic study of 1,200 conversations, 8 annotators and 6 rubrics, jury means of three
judges. Two shapes: every annotator scores every conversation (the worst case: 28 annotator
pairs, 57,600 ratings), and the paper's shape of three annotators per conversation. Each figure
is the best of a few wall-clock repeats, so one slow moment on a busy machine does not fail it.

Run directly (`python bench/bench_alignment.py`) or through bench/run_all.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alignment.engine.agreement import agreement_table  # noqa: E402
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE  # noqa: E402

CONVERSATIONS = 1200
ANNOTATORS = 8
RUBRICS = 6
JUDGES = 3
RESAMPLES = 1000
REPEATS = 3
TARGET_SECONDS = 5.0


def synthetic_study(annotators_per_item: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Clinician ratings and jury means around a latent 1-5 quality per conversation."""
    rng = np.random.default_rng(seed)
    clinicians, jury = [], []
    for rubric in range(RUBRICS):
        quality = rng.uniform(1, 5, CONVERSATIONS)
        for item in range(CONVERSATIONS):
            raters = rng.choice(ANNOTATORS, size=annotators_per_item, replace=False)
            noisy = np.clip(np.rint(quality[item] + rng.normal(0, 0.8, len(raters))), 1, 5)
            clinicians += [(item, f"rubric {rubric}", f"annotator {r}", int(s))
                           for r, s in zip(raters, noisy, strict=True)]  # fmt: skip
        judges = np.clip(
            np.rint(quality[:, None] + rng.normal(-0.3, 0.9, (CONVERSATIONS, JUDGES))), 1, 5
        )
        jury += [(item, f"rubric {rubric}", mean) for item, mean in enumerate(judges.mean(axis=1))]
    return (
        pd.DataFrame(clinicians, columns=[ITEM, RUBRIC, RATER, SCORE]),
        pd.DataFrame(jury, columns=[ITEM, RUBRIC, JURY]),
    )


def _best_of(clinicians: pd.DataFrame, jury: pd.DataFrame) -> float:
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        agreement_table(clinicians, jury, resamples=RESAMPLES, seed=0)
        timings.append(time.perf_counter() - started)
    return min(timings)


def run() -> list[dict]:
    rows = []
    for per_item, shape in ((ANNOTATORS, "all 8 per conversation"), (3, "3 of 8 per conversation")):
        clinicians, jury = synthetic_study(per_item)
        measured = _best_of(clinicians, jury)
        name = (f"agreement report {CONVERSATIONS:,} conv x {RUBRICS} rubrics, {shape}, "
                f"{RESAMPLES:,} resamples")  # fmt: skip
        rows.append({"name": name, "measured": measured, "target": TARGET_SECONDS, "unit": "s",
                     "goal": "<=", "ok": measured <= TARGET_SECONDS})  # fmt: skip
    return rows


if __name__ == "__main__":
    from run_all import report  # the shared measured-vs-target table

    sys.exit(report(run()))
