"""Aggregation of judge scores: weighted aggregate, jury merge, pass rules, completeness.

Scalar functions serve one conversation (the service that stores a merged result); the frame
functions do the same arithmetic for a whole run at once. A score frame has one row per
(conversation_id, rubric, judge) and a `score` column that is NaN when the judge gave no valid
answer. Inter-judge spread is the population standard deviation (ddof=0): it describes this
panel of judges, and it is 0 rather than undefined for a single judge.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

PASS_THRESHOLD = 3
PASS_MODES = ("mean", "majority")
SCORE_COLUMNS = ("conversation_id", "rubric", "judge", "score")
_KEY = ["conversation_id", "rubric"]


@dataclass(frozen=True)
class JuryRubricResult:
    """K judges' scores on one rubric of one conversation, merged."""

    mean: float
    sd: float
    n: int
    passed_by_mean: bool  # the jury-averaged score reaches the threshold
    passed_by_majority: bool  # more than half of the judges pass it; a tie fails
    pass_agreement: bool  # every judge reaches the same pass/fail verdict

    def passed(self, mode: str = "mean") -> bool:
        _check_mode(mode)
        return self.passed_by_mean if mode == "mean" else self.passed_by_majority


def weighted_aggregate(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """sum(w_i * s_i) / sum(w_i) over the rubrics with a positive weight.

    A rubric with weight 0 is left out; any positively weighted rubric without a score is an
    error, because an aggregate over fewer rubrics is not comparable with the others.
    """
    used = _positive_weights(weights)
    missing = [rubric for rubric in used if not _is_score(scores.get(rubric))]
    if missing:
        raise ValueError(f"no score for rubric(s): {', '.join(missing)}")
    total = sum(used.values())
    return sum(weight * float(scores[rubric]) for rubric, weight in used.items()) / total


def merge_judges(scores: Sequence[float], *, threshold: float = PASS_THRESHOLD) -> JuryRubricResult:
    """Merge the valid scores K judges gave one rubric."""
    if not scores:
        raise ValueError("a jury merge needs at least one judge score")
    values = np.asarray(scores, dtype=float)
    passes = values >= threshold
    return JuryRubricResult(
        mean=float(values.mean()),
        sd=float(values.std(ddof=0)),
        n=len(values),
        passed_by_mean=bool(values.mean() >= threshold),
        passed_by_majority=bool(passes.sum() * 2 > len(values)),
        pass_agreement=bool(passes.all() or not passes.any()),
    )


def judge_aggregates(
    scores_by_judge: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]
) -> dict[str, float]:
    """Each judge's own weighted aggregate over the rubrics it scored."""
    return {judge: weighted_aggregate(scores, weights) for judge, scores in scores_by_judge.items()}


def jury_aggregate(
    scores_by_judge: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]
) -> float:
    """The per-judge aggregates averaged across the jury."""
    aggregates = judge_aggregates(scores_by_judge, weights)
    if not aggregates:
        raise ValueError("a jury aggregate needs at least one judge")
    return sum(aggregates.values()) / len(aggregates)


def incomplete_rubrics(
    scores_by_rubric: Mapping[str, Mapping[str, float | None]],
    *,
    rubric_ids: Iterable[str],
    judges: Iterable[str],
) -> list[str]:
    """The rubrics (in the given order) for which some expected judge has no valid score."""
    judges = list(judges)
    return [
        rubric
        for rubric in rubric_ids
        if not all(_is_score(scores_by_rubric.get(rubric, {}).get(judge)) for judge in judges)
    ]


def merge_jury_frame(
    scores: pd.DataFrame, *, judges_expected: int | None = None, pass_mode: str = "mean"
) -> pd.DataFrame:
    """One row per (conversation_id, rubric): mean, sd, n_valid, passed, pass_agreement,
    complete. `judges_expected` defaults to the number of distinct judges in the frame."""
    _check_mode(pass_mode)
    _check_score_frame(scores)
    expected = judges_expected or scores["judge"].nunique()
    passes = (scores["score"] >= PASS_THRESHOLD).astype(float).where(scores["score"].notna())
    grouped = scores.assign(passes=passes).groupby(_KEY, sort=False)
    merged = grouped.agg(
        mean=("score", "mean"),
        n_valid=("score", "count"),
        pass_count=("passes", "sum"),
        pass_min=("passes", "min"),
        pass_max=("passes", "max"),
    )
    merged["sd"] = grouped["score"].std(ddof=0)
    if pass_mode == "mean":
        merged["passed"] = merged["mean"] >= PASS_THRESHOLD
    else:
        merged["passed"] = merged["pass_count"] * 2 > merged["n_valid"]
    merged["pass_agreement"] = merged["pass_min"] == merged["pass_max"]
    merged["complete"] = merged["n_valid"] == expected
    columns = ["mean", "sd", "n_valid", "passed", "pass_agreement", "complete"]
    return merged[columns].reset_index()


def conversation_aggregates(merged: pd.DataFrame, weights: Mapping[str, float]) -> pd.DataFrame:
    """Per conversation: the jury aggregate (weighted mean of the jury-averaged rubric scores,
    equal to the mean of the per-judge aggregates) and whether every weighted rubric is
    complete. The aggregate is NaN for an incomplete conversation."""
    used = pd.Series(_positive_weights(weights), dtype=float)
    means = merged.pivot(index="conversation_id", columns="rubric", values="mean")
    means = means.reindex(columns=used.index)
    complete = (
        merged.pivot(index="conversation_id", columns="rubric", values="complete")
        .reindex(columns=used.index)
        .eq(True)
        .all(axis=1)
    )
    aggregate = means.to_numpy() @ used.to_numpy() / used.sum()
    result = pd.DataFrame({"aggregate": aggregate, "complete": complete}, index=means.index)
    result.loc[~result["complete"], "aggregate"] = np.nan
    return result


def judge_aggregate_frame(scores: pd.DataFrame, weights: Mapping[str, float]) -> pd.DataFrame:
    """One row per (conversation_id, judge) with that judge's aggregate (NaN when the judge
    lacks a valid score on a weighted rubric)."""
    _check_score_frame(scores)
    used = pd.Series(_positive_weights(weights), dtype=float)
    table = scores.pivot(index=["conversation_id", "judge"], columns="rubric", values="score")
    table = table.reindex(columns=used.index)
    aggregate = table.to_numpy() @ used.to_numpy() / used.sum()
    return pd.DataFrame({"aggregate": aggregate}, index=table.index).reset_index()


def _positive_weights(weights: Mapping[str, float]) -> dict[str, float]:
    for rubric, weight in weights.items():
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weight for {rubric!r} must be a finite number >= 0, not {weight}")
    used = {rubric: float(weight) for rubric, weight in weights.items() if weight > 0}
    if not used:
        raise ValueError("at least one rubric needs a positive weight")
    return used


def _is_score(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _check_mode(mode: str) -> None:
    if mode not in PASS_MODES:
        raise ValueError(f"pass mode must be one of {', '.join(PASS_MODES)}, not {mode!r}")


def _check_score_frame(scores: pd.DataFrame) -> None:
    missing = [column for column in SCORE_COLUMNS if column not in scores.columns]
    if missing:
        raise ValueError(f"score frame lacks column(s): {', '.join(missing)}")
    if scores.duplicated(["conversation_id", "rubric", "judge"]).any():
        raise ValueError("score frame has more than one row for a (conversation, rubric, judge)")
