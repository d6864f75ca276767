"""Does a judge's disagreement with the clinicians depend on something it should not?

Per rubric and judge (and the jury's mean as one more row), the judge's difference from the
clinicians, gap = judge score - clinician mean on a conversation, is set against:
- the conversation's length in turns, and in characters of the dialogue (patient and
  assistant messages; per 1,000 characters), and its number of tool calls: the least-squares
  slope of the gap on each, in points per unit (a positive slope: the longer, the more lenient
  the judge is compared with the clinicians - a length bias);
- self-preference: the mean gap on conversations whose agent is of the judge's model family
  minus the mean gap on the other conversations (model families: alignment/data/
  model_families.yaml; agents and judges with no family - the offline scripts, unknown
  models - are left out of this comparison and counted).

Each figure has a 95% bootstrap interval over conversations (one matrix product for every
judge, covariate and resample, as in bootstrap.py) and the n behind it; it is undefined, with
the reason, when the covariate does not vary, too few conversations enter, or no conversation
is on one side of the family comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from alignment.engine.bootstrap import RESAMPLES, Estimate, estimate, ratio, undefined
from alignment.engine.design import sample_batch
from alignment.engine.families import SCRIPTED, FamilyTable
from alignment.engine.frames import ITEM, JUDGE, SCORE
from alignment.engine.items import ItemColumns

JURY_ROW = "jury"
AGENT_MODEL = "agent_model"
# (column of the features table, label, unit the slope is per, divisor of the raw value)
COVARIATES = (
    ("turns", "Length in turns", "turn", 1.0),
    ("characters", "Length in characters", "1,000 characters", 1000.0),
    ("tool_calls", "Tool calls", "tool call", 1.0),
)
SELF_PREFERENCE = "self_preference"
MIN_ITEMS = 3


@dataclass(frozen=True)
class BiasFigure:
    covariate: str  # a COVARIATES key or SELF_PREFERENCE
    label: str
    unit: str  # "points per turn", "points (same family - other)"
    estimate: Estimate
    n_same: int = 0  # self-preference only: conversations of the judge's family
    n_other: int = 0


@dataclass(frozen=True)
class JudgeBias:
    judge: object  # judge index, or JURY_ROW
    model: str  # the judge's model string ("" for the jury row)
    family: str | None  # None: scripted or unknown
    family_note: str  # the family name, or why there is none
    figures: list[BiasFigure] = field(default_factory=list)


def judge_bias(
    judges: pd.DataFrame,
    judge_models: dict,
    jury: pd.Series,
    clinician_mean: pd.Series,
    features: pd.DataFrame,
    families: FamilyTable,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> list[JudgeBias]:
    """judges: item, judge, score (one rubric); judge_models: judge -> model string; jury and
    clinician_mean: by item; features: item, turns, characters, tool_calls, agent_model.

    Conversations enter where the clinicians' mean and the judge's score (the jury's mean for
    the jury row) are both known. One row per judge, then the jury."""
    # Conversations in id order, whatever order they came in: the resamples draw positions.
    mean = pd.to_numeric(clinician_mean, errors="coerce").dropna().sort_index()
    table = features.set_index(ITEM).reindex(mean.index)
    wide = judges.pivot(index=ITEM, columns=JUDGE, values=SCORE).astype(float).reindex(mean.index)
    gaps = {j: (wide[j] - mean).to_numpy(dtype=float) for j in wide.columns}
    gaps[JURY_ROW] = (pd.to_numeric(jury, errors="coerce").reindex(mean.index) - mean).to_numpy()
    agents = table[AGENT_MODEL].fillna("").astype(str).tolist()
    family_of = {model: families.family_of(model) for model in set(agents)}
    agent_families = [family_of[model] for model in agents]
    columns = ItemColumns(len(mean))
    plan = []
    for row, gap in gaps.items():
        model = "" if row == JURY_ROW else str(judge_models.get(row, ""))
        family, note = (
            (None, "the jury as a whole") if row == JURY_ROW else families.classify(model)
        )
        has = np.isfinite(gap)
        y = np.where(has, gap, 0.0)
        for name, _, _, divisor in COVARIATES:
            x = table[name].to_numpy(dtype=float) / divisor
            known = has & np.isfinite(x)
            x = np.where(known, x, 0.0)
            columns.add(f"{row} {name}", np.column_stack([known, x, y * known, x * x, x * y]))
        if family is not None:
            same = has & np.array([f == family for f in agent_families], dtype=bool)
            other = has & np.array([f is not None and f != family for f in agent_families])
            columns.add(f"{row} self", np.column_stack([same, other, y * same, y * other]))
        plan.append((row, model, family, note))
    batch = sample_batch(len(mean), resamples, seed)
    counts, sums = batch.sums(columns)
    unfamiliar = sum(f is None for f in agent_families)
    return [
        JudgeBias(
            row,
            model,
            family,
            _family_note(note),
            [*_slopes(row, sums, counts), _self(row, family, note, sums, counts, unfamiliar)],
        )
        for row, model, family, note in plan
    ]


def _slopes(row, sums: dict, counts: dict) -> list[BiasFigure]:
    figures = []
    for name, label, unit, _ in COVARIATES:
        block, n = sums[f"{row} {name}"], int(counts[f"{row} {name}"][0, 0])
        n_, sx, sy, sxx, sxy = (block[:, k] for k in range(5))
        spread = n_ * sxx - sx * sx
        spread = np.where(np.abs(spread) < 1e-9 * np.maximum(n_ * sxx, 1.0), 0.0, spread)
        values = ratio(n_ * sxy - sx * sy, spread)
        if n < MIN_ITEMS:
            figure = undefined(
                f"a slope needs at least {MIN_ITEMS} conversations; {n} have both scores",
                n_items=n,
                n_ratings=n,
            )
        else:
            reason = f"every conversation has the same {label.lower()}, so there is no slope"
            figure = estimate(values, n_items=n, n_ratings=n, reason=reason)
        figures.append(BiasFigure(name, label, f"points per {unit}", figure))
    return figures


def _self(row, family, note, sums, counts, unfamiliar: int) -> BiasFigure:
    label, unit = "Same model family as the agent", "points (same family - other families)"
    if row == JURY_ROW:
        reason = "judged per judge: the jury's judges may be of several families"
        return BiasFigure(SELF_PREFERENCE, label, unit, undefined(reason))
    if family is None:
        reason = (
            "the judge is an offline script, not a model: it has no family"
            if note == SCRIPTED
            else "the judge's model matches no family in alignment/data/model_families.yaml"
        )
        return BiasFigure(SELF_PREFERENCE, label, unit, undefined(reason))
    block, count = sums[f"{row} self"], counts[f"{row} self"]
    n_same, n_other = int(count[0, 0]), int(count[0, 1])
    values = ratio(block[:, 2], block[:, 0]) - ratio(block[:, 3], block[:, 1])
    if n_same == 0 or n_other == 0:
        side = "of the judge's family" if n_same == 0 else "of another family"
        reason = f"no annotated conversation's agent is {side}"
        if unfamiliar:
            reason += f" ({unfamiliar} agent conversation(s) have no family and are left out)"
        figure = undefined(reason, n_items=n_same + n_other, n_ratings=n_same + n_other)
    else:
        figure = estimate(
            values,
            n_items=n_same + n_other,
            n_ratings=n_same + n_other,
            reason="a resample drew one side only",
        )
    return BiasFigure(SELF_PREFERENCE, label, unit, figure, n_same, n_other)


def _family_note(note: str) -> str:
    if note == SCRIPTED:
        return "offline script (not a model): no family"
    if note == "unknown":
        return "no family in model_families.yaml"
    return note
