"""Multi-dimensional stratified sampling of conversations for a clinician study.

A stratum (cell) is (model, rubric, jury score bin 1-5). Every conversation falls in one cell per
rubric, so one pick can cover several cells. The sampler raises a per-cell target one level at a
time; within a level it walks the bins extremes first (1, 5, 2, 4, 3) and, for each cell still
under the level, picks the conversation that lifts the most under-level cells (ties broken by a
seeded shuffle). The result: every rubric's 1-5 range represented across models wherever the
data have it, the rare extremes before the crowded middle, and the same seed giving the same
sample.

The design, for weighting the sample back to the population (alignment's population-weighted
figures, a second-phase sample drawn from this one):
- N_c (`available`): conversations in cell c; d_c (`drawn`): conversations drawn *for* c (the
  pick's `cell`). Conversations drawn for another cell that happen to lie in c are not draws
  for c: they are counted in `sampled`, which is what the coverage page shows.
- A conversation lies in one cell per rubric, and each of those cells had its own draws, so it
  could enter the sample through any of them. Taking each cell's draws as a random d_c of its
  N_c, its chance of entering through c is d_c / N_c and its chance of entering at all is
  pi = 1 - prod over its cells of (1 - d_c / N_c) (`inclusion_probability`). That one
  probability, not a per-rubric one, is what a Hajek weight needs: the sample is one sample,
  and every rubric's figure is computed on it. Its weight is 1 / pi (`item_weight`).
- A rubric's figure uses the conversation's cell *of that rubric* only as its stratum (the
  bootstrap resamples within those cells). Each cell also records the population's jury
  scores (sum, sum of squares, passes), so a model's jury mean over every conversation the
  study could draw is known without the conversations themselves.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

BINS = (1, 2, 3, 4, 5)
BIN_PRIORITY = (1, 5, 2, 4, 3)

Cell = tuple[str, str, int]  # (model, rubric, bin)


@dataclass(frozen=True)
class Candidate:
    conversation_id: int
    model: str
    scores: dict[str, float]  # rubric id -> jury mean
    passes: dict[str, bool] = field(default_factory=dict)  # rubric id -> the jury's verdict

    def cells(self) -> tuple[Cell, ...]:
        return tuple((self.model, r, score_bin(s)) for r, s in sorted(self.scores.items()))

    def bins(self) -> dict[str, int]:
        return {rubric: bin_ for _, rubric, bin_ in self.cells()}


@dataclass
class CellPopulation:
    """The jury's scores over every conversation of a cell (not only the sampled ones)."""

    jury_sum: float = 0.0
    jury_squares: float = 0.0
    passed: int = 0

    def add(self, score: float, passed: bool) -> None:
        self.jury_sum += score
        self.jury_squares += score * score
        self.passed += int(passed)


@dataclass(frozen=True)
class Pick:
    conversation_id: int
    cell: Cell  # the stratum this conversation was drawn for


@dataclass
class Sample:
    picks: list[Pick]
    available: Counter = field(default_factory=Counter)
    sampled: Counter = field(default_factory=Counter)
    wanted_per_cell: int = 1
    models: tuple[str, ...] = ()
    rubrics: tuple[str, ...] = ()
    drawn: Counter = field(default_factory=Counter)  # cell -> conversations drawn for it
    population: dict = field(default_factory=dict)  # cell -> CellPopulation

    def inclusion_probability(self, candidate: Candidate) -> float:
        """The candidate's chance of entering this sample (see the module docstring)."""
        return inclusion_probability(candidate.cells(), available=self.available, drawn=self.drawn)

    def shortfalls(self) -> list[dict]:
        """Cells that got fewer conversations than wanted, with how many existed at all."""
        return [
            {"model": m, "rubric": r, "bin": b, "available": self.available[(m, r, b)],
             "sampled": self.sampled[(m, r, b)], "wanted": self.wanted_per_cell}
            for m in self.models for r in self.rubrics for b in BINS
            if self.sampled[(m, r, b)] < self.wanted_per_cell
        ]  # fmt: skip

    def coverage(self) -> dict:
        """JSON for the study page: every cell's available / sampled counts and the shortfalls."""
        return {
            "models": list(self.models),
            "rubrics": list(self.rubrics),
            "wanted_per_cell": self.wanted_per_cell,
            "cells": [
                {
                    "model": m,
                    "rubric": r,
                    "bin": b,
                    "available": self.available[(m, r, b)],
                    "sampled": self.sampled[(m, r, b)],
                    "drawn": self.drawn[(m, r, b)],
                    **self._population_json((m, r, b)),
                }
                for m in self.models
                for r in self.rubrics
                for b in BINS
            ],  # fmt: skip
            "shortfalls": self.shortfalls(),
        }

    def _population_json(self, cell: Cell) -> dict:
        population = self.population.get(cell, CellPopulation())
        return {
            "jury_sum": population.jury_sum,
            "jury_squares": population.jury_squares,
            "passed": population.passed,
        }


def inclusion_probability(
    cells: Iterable[Cell], *, available: Mapping[Cell, int], drawn: Mapping[Cell, int]
) -> float:
    """1 - prod over the conversation's cells of (1 - d_c / N_c): the chance it entered a
    sample made of per-cell draws through at least one of its cells (one per rubric).

    `available` (N_c) and `drawn` (d_c) are per-cell counts; a cell with no draws adds
    nothing. A cell that lists the conversation has N_c >= 1, so the result lies in (0, 1]
    whenever one of its cells had a draw."""
    missed = 1.0
    for cell in cells:
        size = available.get(cell, 0)
        if size:
            missed *= 1.0 - min(drawn.get(cell, 0), size) / size
    return 1.0 - missed


def item_weight(probability: float | None) -> float | None:
    """The Hajek weight of a sampled conversation: how many conversations of the population it
    stands for, 1 / inclusion probability; None when the probability is unknown (an item
    drawn before the design was recorded) or zero (it cannot have been drawn)."""
    if probability is None or probability <= 0:
        return None
    return 1.0 / probability


def score_bin(score: float) -> int:
    """The 1-5 bin of a jury mean, halves rounded up (2.5 -> 3), so a bin is a score a
    clinician could give."""
    return min(5, max(1, math.floor(score + 0.5)))


def stratified_sample(candidates: Sequence[Candidate], *, size: int, seed: int) -> Sample:
    pool = sorted(candidates, key=lambda c: c.conversation_id)
    random.Random(seed).shuffle(pool)
    models = tuple(sorted({c.model for c in pool}))
    rubrics = tuple(sorted({r for c in pool for r in c.scores}))
    available = Counter(cell for c in pool for cell in c.cells())
    population: dict[Cell, CellPopulation] = {}
    for candidate in pool:
        for cell in candidate.cells():
            score = candidate.scores[cell[1]]
            population.setdefault(cell, CellPopulation()).add(
                score, candidate.passes.get(cell[1], False)
            )
    by_cell: dict[Cell, list[Candidate]] = {}
    for candidate in pool:
        for cell in candidate.cells():
            by_cell.setdefault(cell, []).append(candidate)
    cell_count = len(models) * len(rubrics) * len(BINS)
    wanted = max(1, (min(size, len(pool)) * len(rubrics)) // cell_count) if cell_count else 1

    sample = Sample([], available, Counter(), wanted, models, rubrics, population=population)
    taken: set[int] = set()
    level = 1
    while len(sample.picks) < size and len(taken) < len(pool):
        added = _fill_level(sample, by_cell, taken, level, size)
        if not added and level >= wanted:
            _fill_rest(sample, pool, taken, size)
        level += 1
    return sample


def _fill_level(sample: Sample, by_cell, taken: set[int], level: int, size: int) -> int:
    added = 0
    for bin_ in BIN_PRIORITY:
        for rubric in sample.rubrics:
            for model in sample.models:
                cell = (model, rubric, bin_)
                if len(sample.picks) >= size:
                    return added
                if sample.sampled[cell] >= level:
                    continue
                best = _best_candidate(by_cell.get(cell, ()), taken, sample.sampled, level)
                if best is not None:
                    _take(sample, taken, best, cell)
                    added += 1
    return added


def _best_candidate(cell_candidates, taken: set[int], sampled: Counter, level: int):
    best, best_gain = None, 0
    for candidate in cell_candidates:
        if candidate.conversation_id in taken:
            continue
        gain = sum(1 for cell in candidate.cells() if sampled[cell] < level)
        if gain > best_gain:  # strictly greater: the seeded shuffle order breaks ties
            best, best_gain = candidate, gain
    return best


def _fill_rest(sample: Sample, pool, taken: set[int], size: int) -> None:
    """Every cell is at its level or out of conversations: top up in the shuffled order."""
    for candidate in pool:
        if len(sample.picks) >= size:
            return
        if candidate.conversation_id not in taken:
            _take(sample, taken, candidate, candidate.cells()[0])


def _take(sample: Sample, taken: set[int], candidate: Candidate, cell: Cell) -> None:
    taken.add(candidate.conversation_id)
    sample.picks.append(Pick(candidate.conversation_id, cell))
    sample.sampled.update(candidate.cells())
    sample.drawn[cell] += 1
