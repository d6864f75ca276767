"""A jury calibrated to clinicians: what is stored and how it turns judge scores into a score.

A calibration is fitted elsewhere (alignment.engine.calibration, from a study's clinician
scores); here it is only data and its arithmetic, so the scoring service can apply it to every
conversation a calibrated jury scores. Per rubric it may hold:

- judge maps: a monotone, piecewise-linear map from one judge's score to the clinicians' scale
  (the breakpoints of an isotonic fit), applied to that judge's score first;
- judge weights: non-negative weights and an intercept, so the rubric's score is
  intercept + sum(weight x mapped judge score) instead of the plain mean of the judges;
- an aggregate map: a monotone map applied last, to the combined score;
- examples: clinician-scored conversations placed in the judge prompt (they change what the
  judges answer, not the arithmetic).

Every result is clipped to the score scale [1, 5]. A rubric with nothing fitted combines as the
plain mean, so an empty calibration is the uncalibrated jury.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LOWEST, HIGHEST = 1.0, 5.0
# The parts a variant may combine, in the order the arithmetic applies them.
PARTS = ("examples", "judge_maps", "weights", "aggregate_map")


class CalibrationError(ValueError):
    """A stored calibration cannot be read: the message names the field."""


@dataclass(frozen=True)
class ScoreMap:
    """A non-decreasing piecewise-linear map; flat beyond its first and last breakpoint."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y) or not self.x:
            raise CalibrationError("a score map needs as many y as x breakpoints, at least one")
        if any(not math.isfinite(v) for v in (*self.x, *self.y)):
            raise CalibrationError("a score map's breakpoints must be finite numbers")
        if any(b <= a for a, b in zip(self.x, self.x[1:], strict=False)):
            raise CalibrationError("a score map's x breakpoints must increase")
        if any(b < a for a, b in zip(self.y, self.y[1:], strict=False)):
            raise CalibrationError("a score map must not decrease")

    def apply(self, values):
        """Map a score or an array of scores (NaN stays NaN)."""
        mapped = np.interp(np.asarray(values, dtype=float), self.x, self.y)
        mapped = np.where(np.isnan(values), np.nan, mapped)
        return float(mapped) if np.ndim(mapped) == 0 else mapped

    def to_dict(self) -> dict:
        return {"x": [round(v, 6) for v in self.x], "y": [round(v, 6) for v in self.y]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreMap:
        try:
            return cls(tuple(float(v) for v in data["x"]), tuple(float(v) for v in data["y"]))
        except (KeyError, TypeError, ValueError) as error:
            if isinstance(error, CalibrationError):
                raise
            raise CalibrationError(f"a score map needs numeric lists x and y ({error})") from error


@dataclass(frozen=True)
class Example:
    """One clinician-scored conversation shown to the judges as a worked example."""

    conversation_id: int
    score: int  # the clinicians' score (adjudicated, else their rounded mean)
    feedback: str = ""  # the clinicians' own words on this rubric, if they wrote any

    def to_dict(self) -> dict:
        return {
            "conversation_id": self.conversation_id,
            "score": self.score,
            "feedback": self.feedback,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Example:
        try:
            score = int(data["score"])
            example = cls(int(data["conversation_id"]), score, str(data.get("feedback", "")))
        except (KeyError, TypeError, ValueError) as error:
            raise CalibrationError(
                f"an example needs conversation_id and score ({error})"
            ) from error
        if not LOWEST <= score <= HIGHEST:
            raise CalibrationError(f"an example's score must lie in 1-5, got {score}")
        return example


@dataclass(frozen=True)
class RubricCalibration:
    judge_maps: Mapping[str, ScoreMap] = field(default_factory=dict)  # judge model -> map
    weights: Mapping[str, float] = field(default_factory=dict)  # judge model -> weight >= 0
    intercept: float = 0.0
    aggregate_map: ScoreMap | None = None
    examples: tuple[Example, ...] = ()

    def __post_init__(self) -> None:
        for judge, weight in self.weights.items():
            if not math.isfinite(weight) or weight < 0:
                raise CalibrationError(f"the weight of judge {judge} must be a number >= 0")
        if self.weights and not any(weight > 0 for weight in self.weights.values()):
            raise CalibrationError("judge weights need at least one positive weight")
        if not math.isfinite(self.intercept):
            raise CalibrationError("the intercept must be a finite number")

    @property
    def parts(self) -> tuple[str, ...]:
        present = {
            "examples": bool(self.examples),
            "judge_maps": bool(self.judge_maps),
            "weights": bool(self.weights),
            "aggregate_map": self.aggregate_map is not None,
        }
        return tuple(part for part in PARTS if present[part])

    def combine(self, scores: Mapping[str, float | None]) -> float | None:
        """One conversation's rubric score from its judges' scores (judge model -> score);
        None when a judge the combination needs has no score."""
        judges = list(self.weights) if self.weights else list(scores)
        if not judges:
            return None
        row = np.array([[_score(scores.get(judge)) for judge in judges]])
        value = self.combine_matrix(row, judges)[0]
        return None if np.isnan(value) else float(value)

    def combine_matrix(self, scores: np.ndarray, judges: Sequence[str]) -> np.ndarray:
        """Rows of judges' scores (columns in `judges` order, NaN for none) -> one score a row;
        NaN where any needed judge is missing. The same arithmetic as `combine`, vectorised."""
        scores = np.asarray(scores, dtype=float)
        mapped = (
            np.column_stack(
                [
                    self.judge_maps[judge].apply(scores[:, j])
                    if judge in self.judge_maps
                    else scores[:, j]
                    for j, judge in enumerate(judges)
                ]
            )
            if len(judges)
            else scores
        )
        if self.weights:
            missing = [judge for judge in self.weights if judge not in judges]
            if missing:
                raise CalibrationError(f"no scores for weighted judge(s): {', '.join(missing)}")
            w = np.array([self.weights.get(judge, 0.0) for judge in judges])
            used = w > 0
            combined = self.intercept + mapped[:, used] @ w[used]
        else:
            combined = mapped.mean(axis=1)
        if self.aggregate_map is not None:
            combined = self.aggregate_map.apply(combined)
        return np.clip(combined, LOWEST, HIGHEST)

    def to_dict(self) -> dict:
        data: dict[str, Any] = {}
        if self.judge_maps:
            data["judge_maps"] = {judge: m.to_dict() for judge, m in self.judge_maps.items()}
        if self.weights:
            data["weights"] = {judge: round(w, 6) for judge, w in self.weights.items()}
            data["intercept"] = round(self.intercept, 6)
        if self.aggregate_map is not None:
            data["aggregate_map"] = self.aggregate_map.to_dict()
        if self.examples:
            data["examples"] = [example.to_dict() for example in self.examples]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RubricCalibration:
        if not isinstance(data, Mapping):
            raise CalibrationError("a rubric's calibration must be an object")
        unknown = set(data) - {*PARTS, "intercept"}
        if unknown:
            raise CalibrationError(f"unknown calibration field(s): {', '.join(sorted(unknown))}")
        try:
            weights = {str(j): float(w) for j, w in (data.get("weights") or {}).items()}
            intercept = float(data.get("intercept", 0.0))
        except (TypeError, ValueError, AttributeError) as error:
            raise CalibrationError(
                f"judge weights must map judge models to numbers ({error})"
            ) from error
        aggregate = data.get("aggregate_map")
        return cls(
            judge_maps={
                str(j): ScoreMap.from_dict(m) for j, m in (data.get("judge_maps") or {}).items()
            },
            weights=weights,
            intercept=intercept,
            aggregate_map=None if aggregate is None else ScoreMap.from_dict(aggregate),
            examples=tuple(Example.from_dict(e) for e in data.get("examples") or ()),
        )


IDENTITY = RubricCalibration()


@dataclass(frozen=True)
class Calibration:
    """A whole jury's calibration: one RubricCalibration per rubric id (absent: none)."""

    rubrics: Mapping[str, RubricCalibration] = field(default_factory=dict)

    def rubric(self, rubric_id: str) -> RubricCalibration:
        return self.rubrics.get(rubric_id, IDENTITY)

    def combine(self, rubric_id: str, scores: Mapping[str, float | None]) -> float | None:
        return self.rubric(rubric_id).combine(scores)

    def examples(self, rubric_id: str) -> tuple[Example, ...]:
        return self.rubric(rubric_id).examples

    @property
    def parts(self) -> tuple[str, ...]:
        present = {part for rubric in self.rubrics.values() for part in rubric.parts}
        return tuple(part for part in PARTS if part in present)

    @property
    def is_identity(self) -> bool:
        return not self.parts

    def example_conversations(self) -> set[int]:
        return {e.conversation_id for r in self.rubrics.values() for e in r.examples}

    def to_dict(self) -> dict:
        return {rubric: c.to_dict() for rubric, c in self.rubrics.items() if c.parts}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Calibration:
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise CalibrationError("a calibration must be an object keyed by rubric id")
        return cls({str(rubric): RubricCalibration.from_dict(c) for rubric, c in data.items()})


def _score(value: float | None) -> float:
    return math.nan if value is None else float(value)
