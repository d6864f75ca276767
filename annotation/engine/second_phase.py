"""A second phase of a clinician study: more conversations, drawn where they teach most.

After the first wave, a researcher may add conversations the judges disagree on (a wide spread
of the judges' scores on some rubric) or whose jury mean lies near the pass threshold (where
the verdict turns on a fraction of a point). Picking the top of such a list would give those
conversations an unknown chance of being chosen, and the population-weighted figures need a
known one. So each conversation gets a size - a floor, plus its judge spread and its nearness
to the threshold, each in [0, 1] - and the second phase is a systematic sample with
probability proportional to size (Madow's method): a fixed number of draws whose inclusion
probabilities are exactly n * size / total, with sizes that would reach 1 taken for certain
(probability 1) and the rest of the draws spread over the others. The floor keeps every
conversation's chance above zero, so none of the population is left without a weight.

The second phase is drawn over the whole population the first phase drew from - the
conversations already in the study included - with its own seed, so its chances pi_2 do not
depend on which conversations the first phase took. A draw that lands on a conversation already
in the study adds nothing. The two phases are then independent, and a conversation's chance of
being in the study is exactly pi = 1 - (1 - pi_1) (1 - pi_2) (`combined_probability`), for the
conversations either phase took. (Drawing only among the conversations the first phase left
would make pi_2 depend on the first sample, and that union formula would no longer hold.)
Each item's weight stays 1 / pi.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

# The widest spread of scores on a 1-5 scale (half 1s, half 5s) has a population standard
# deviation of 2; the threshold's neighbourhood is two points wide on either side.
WIDEST_SPREAD = 2.0
NEAR_THRESHOLD_POINTS = 2.0
DEFAULT_FLOOR = 0.1


@dataclass(frozen=True)
class Teaching:
    """Why a conversation is worth a clinician's time, as sizes in [0, 1]."""

    spread: float  # the judges' widest disagreement on one rubric
    nearness: float  # how close the jury mean of one rubric lies to the pass threshold
    rubric: str  # the rubric that gave the larger of the two

    def size(self, *, floor: float, spread_weight: float, nearness_weight: float) -> float:
        return floor + spread_weight * self.spread + nearness_weight * self.nearness


def teaching(
    judge_scores: Mapping[str, Sequence[float]],
    jury_means: Mapping[str, float],
    *,
    threshold: float,
) -> Teaching:
    """The judges' spread and the nearness to the threshold of one conversation, from its
    judges' scores and its jury mean per rubric (rubrics without scores count as zero)."""
    spreads = {
        rubric: min(1.0, statistics.pstdev(scores) / WIDEST_SPREAD)
        for rubric, scores in judge_scores.items()
        if len(scores) > 1
    }
    nearness = {
        rubric: max(0.0, 1.0 - abs(mean - threshold) / NEAR_THRESHOLD_POINTS)
        for rubric, mean in jury_means.items()
    }
    widest = max(spreads.items(), key=lambda kv: (kv[1], kv[0]), default=("", 0.0))
    nearest = max(nearness.items(), key=lambda kv: (kv[1], kv[0]), default=("", 0.0))
    rubric = widest[0] if widest[1] >= nearest[1] else nearest[0]
    return Teaching(spread=widest[1], nearness=nearest[1], rubric=rubric)


@dataclass(frozen=True)
class SecondPhase:
    chosen: list[int]  # the drawn ids, in the order the systematic walk met them
    scale: float  # pi_2 = min(1, scale * size) for sizes below `certain_from`
    certain_from: float  # sizes at or above this are taken with certainty
    added: list[int] = field(default_factory=list)  # drawn and not in the study yet

    def probability(self, size: float) -> float:
        """pi_2 of a conversation of this size under this design (drawn or not, already in
        the study or not)."""
        if size >= self.certain_from:
            return 1.0
        return min(1.0, self.scale * size)


def second_phase_draw(
    sizes: Mapping[int, float], *, taken: Collection[int], draws: int, seed: int
) -> SecondPhase:
    """The second phase over the whole population (`sizes` holds every conversation the first
    phase could draw, `taken` those in the study): see the module docstring."""
    design = pps_systematic(sizes, draws=draws, seed=seed)
    added = [key for key in design.chosen if key not in taken]
    return replace(design, added=added)


def pps_systematic(sizes: Mapping[int, float], *, draws: int, seed: int) -> SecondPhase:
    """Draw `draws` of the eligible ids with probability proportional to size.

    Ids are walked in a seeded random order (so neighbours in id order are not drawn
    together); a uniform start u in [0, 1) and the points u, u + 1, ... on the cumulative
    scale of the (rescaled) sizes pick the ids whose interval holds a point."""
    if any(size <= 0 for size in sizes.values()):
        raise ValueError("every size must be positive")
    draws = min(draws, len(sizes))
    if draws <= 0:
        return SecondPhase(chosen=[], scale=0.0, certain_from=math.inf)
    certain, scale, certain_from = _certain_units(sizes, draws)
    # A stream of its own: the same seed number as the first phase's must not tie the two
    # phases' draws together, or they would not be independent.
    rng = random.Random(f"second phase {seed}")
    order = sorted(set(sizes) - certain)
    rng.shuffle(order)
    chosen = sorted(certain)
    point, cumulative = rng.random(), 0.0
    for key in order:
        cumulative += scale * sizes[key]
        while point < cumulative - 1e-12 and len(chosen) < draws:
            chosen.append(key)
            point += 1.0
    return SecondPhase(chosen=chosen, scale=scale, certain_from=certain_from)


def _certain_units(sizes: Mapping[int, float], draws: int) -> tuple[set[int], float, float]:
    """Ids whose share n * size / total would reach 1 are taken for certain, and the rest of
    the draws shared out among the others, again and again until no share reaches 1."""
    certain: set[int] = set()
    while True:
        rest = {key: size for key, size in sizes.items() if key not in certain}
        left = draws - len(certain)
        total = sum(rest.values())
        if left <= 0 or not rest:
            return certain, 0.0, min(sizes[key] for key in certain) if certain else math.inf
        scale = left / total
        reaching = {key for key, size in rest.items() if scale * size >= 1.0 - 1e-12}
        if not reaching:
            certain_from = min((sizes[key] for key in certain), default=math.inf)
            return certain, scale, certain_from
        certain |= reaching


def combined_probability(first: float | None, second: float) -> float:
    """The chance of entering the study through either of two independent phases."""
    return 1.0 - (1.0 - (first or 0.0)) * (1.0 - second)
