"""Stratified sampling of conversations for a clinician study, with exact inclusion probabilities.

Cells. A cell is (model, rubric, jury score bin 1-5). A conversation lies in one cell per rubric,
so cells overlap and cannot be a design's strata: a sampler that picks conversations to fill
several cells at once gives them chances nobody can write down.

Strata. Each conversation belongs to exactly one stratum, named after its *home cell*: the rarest
of its cells (fewest conversations of the population; ties go to the extremes, bins 1, 5, 2, 4,
3, then to rubric order). The rule reads only the population's cell counts, so the strata are
fixed before anything is drawn, and the rare corners a study wants (a model's 1s or 5s on some
rubric) are strata of their own.

Strata are as fine as the sample allows: one per home cell when the sample can give each of
them a draw; otherwise the home cells keep a stratum of their own in the order extremes first
(bin, then rubric, then model), as many as fit, and the rest are pooled by model and bin (or by
model, or all together, when even that does not fit) - so no conversation is left without a
chance, and the rare extremes are the ones that keep theirs.

Allocation. How many conversations each stratum gives (n_h of its N_h) is decided from the
population alone, before the draw (`_allocate`):
- every stratum gives one;
- then, level by level up to the wanted conversations per cell, every cell expected to get
  fewer than the level (the sum of its conversations' chances), extremes first, gets one more
  draw from the stratum where a draw raises its expectation most (the largest share of the
  stratum's conversations lying in the cell: its own stratum, when it has one);
- the rest goes one at a time to the stratum whose conversations would each stand for the
  most others (largest N_h / (n_h + 1)), which keeps the largest weight as small as it can be.
Coverage is thus planned in expectation: a cell with a stratum of its own is sure to get a
conversation, the others get theirs by chance (a greedy sampler that counts what it already has
can promise more, but not a chance anyone can write down).

Draw. Within each stratum, n_h of its N_h conversations by simple random sampling without
replacement, seeded. A conversation's inclusion probability is therefore exactly n_h / N_h, the
probabilities over the population add up to the sample size, and its Hajek weight 1 / pi
(`item_weight`) is its Horvitz-Thompson weight (the weights of every sample add up to the
population). The strata recorded with the items are the design's: the bootstrap and the design
variance resample within them. The seed only enters the draw; the same population, size and
seed give the same sample.

Coverage (the study page): every cell's size, the conversations it got, the number it was
expected to get, the design's strata (key, home cells, N_h, n_h), and the population's jury
scores (sum, sum of squares, passes), so a model's jury mean over every conversation the study
could draw is known without the conversations.

Studies drawn before this design (coverage without a `design` entry) came from a greedy sampler
that preferred conversations filling several short cells at once; the probabilities it recorded
(`greedy_inclusion_probability`) were not its real chances. They are kept as recorded, and the
reports say the weights are approximate.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

BINS = (1, 2, 3, 4, 5)
BIN_PRIORITY = (1, 5, 2, 4, 3)
DESIGN_VERSION = 2
# How the home cells that get no stratum of their own are pooled, finest first.
POOLS = ("model and bin", "model", "all")

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
class Stratum:
    key: str  # the home cell's label, or the group of home cells it pools
    cells: tuple[Cell, ...]  # the home cells of its conversations
    size: int  # N_h
    drawn: int  # n_h

    @property
    def probability(self) -> float:
        return self.drawn / self.size

    def as_json(self) -> dict:
        return {
            "key": self.key,
            "cells": [list(cell) for cell in self.cells],
            "size": self.size,
            "drawn": self.drawn,
        }


@dataclass(frozen=True)
class Design:
    """Disjoint strata with a fixed number of draws each, for one population (its cell
    counts decide every conversation's home cell, and so its stratum)."""

    strata: tuple[Stratum, ...]
    available: Mapping[Cell, int]

    @cached_property
    def _by_home(self) -> dict[Cell, Stratum]:
        return {cell: stratum for stratum in self.strata for cell in stratum.cells}

    def stratum_of(self, candidate: Candidate) -> Stratum:
        return self._by_home[home_cell(candidate.cells(), self.available)]

    def probability(self, candidate: Candidate) -> float:
        """The candidate's inclusion probability: n_h / N_h of its stratum, exactly."""
        return self.stratum_of(candidate).probability

    def as_json(self) -> dict:
        return {"version": DESIGN_VERSION, "strata": [s.as_json() for s in self.strata]}

    @classmethod
    def from_coverage(cls, coverage: Mapping) -> Design | None:
        """The design a study recorded in its coverage; None for a study drawn before it."""
        recorded = coverage.get("design")
        if not recorded:
            return None
        strata = tuple(
            Stratum(s["key"], tuple(tuple(cell) for cell in s["cells"]), s["size"], s["drawn"])
            for s in recorded["strata"]
        )
        cells = coverage.get("cells") or []
        available = {(c["model"], c["rubric"], c["bin"]): c["available"] for c in cells}
        return cls(strata, available)


@dataclass(frozen=True)
class Pick:
    conversation_id: int
    cell: Cell  # the conversation's home cell
    stratum: str  # the key of its design stratum


@dataclass(frozen=True)
class Plan:
    """Everything about a sample that the population decides before the seed."""

    design: Design
    members: dict[str, list[int]]  # stratum key -> its conversations, by id
    homes: dict[int, Cell]  # conversation -> home cell
    cells_of: dict[int, tuple[Cell, ...]]  # conversation -> its cells (one per rubric)
    models: tuple[str, ...]
    rubrics: tuple[str, ...]
    wanted_per_cell: int
    population: dict[Cell, CellPopulation]


@dataclass
class Sample:
    picks: list[Pick]
    plan: Plan
    sampled: Counter = field(default_factory=Counter)  # cell -> conversations taken in it

    @property
    def design(self) -> Design:
        return self.plan.design

    @property
    def available(self) -> Mapping[Cell, int]:
        return self.plan.design.available

    @property
    def wanted_per_cell(self) -> int:
        return self.plan.wanted_per_cell

    def inclusion_probability(self, candidate: Candidate) -> float:
        """The candidate's chance of entering this sample (see the module docstring)."""
        return self.design.probability(candidate)

    def cells(self) -> list[Cell]:
        plan = self.plan
        return [(m, r, b) for m in plan.models for r in plan.rubrics for b in BINS]

    def shortfalls(self) -> list[dict]:
        """Cells that got fewer conversations than wanted, with how many existed at all."""
        return [
            {
                "model": m,
                "rubric": r,
                "bin": b,
                "available": self.available.get((m, r, b), 0),
                "sampled": self.sampled[(m, r, b)],
                "wanted": self.wanted_per_cell,
            }
            for m, r, b in self.cells()
            if self.sampled[(m, r, b)] < self.wanted_per_cell
        ]

    def coverage(self) -> dict:
        """JSON for the study page and the weights: every cell's size, conversations sampled
        and expected, the population's jury scores, the design's strata and the shortfalls."""
        expected = expected_per_cell(self.plan)
        return {
            "models": list(self.plan.models),
            "rubrics": list(self.plan.rubrics),
            "wanted_per_cell": self.wanted_per_cell,
            "cells": [
                {
                    "model": m,
                    "rubric": r,
                    "bin": b,
                    "available": self.available.get((m, r, b), 0),
                    "sampled": self.sampled[(m, r, b)],
                    "expected": round(expected[(m, r, b)], 6),
                    **self._population_json((m, r, b)),
                }
                for m, r, b in self.cells()
            ],
            "design": self.design.as_json(),
            "shortfalls": self.shortfalls(),
        }

    def _population_json(self, cell: Cell) -> dict:
        population = self.plan.population.get(cell, CellPopulation())
        return {
            "jury_sum": population.jury_sum,
            "jury_squares": population.jury_squares,
            "passed": population.passed,
        }


def cell_label(cell: Cell) -> str:
    model, rubric, bin_ = cell
    return f"{model} | {rubric} jury {bin_}"


def pool_key(home: Cell, pool: str) -> str:
    """The pooled stratum of a home cell too common to get a stratum of its own."""
    model, _, bin_ = home
    return {
        "model and bin": f"{model} | other cells, jury {bin_}",
        "model": f"{model} | other cells",
        "all": "other cells",
    }[pool]


def home_cell(cells: Iterable[Cell], available: Mapping[Cell, int]) -> Cell:
    """The conversation's rarest cell (ties: extremes first, then rubric order)."""
    return min(cells, key=lambda c: (available.get(c, 0), BIN_PRIORITY.index(c[2]), c[1]))


def greedy_inclusion_probability(
    cells: Iterable[Cell], *, available: Mapping[Cell, int], drawn: Mapping[Cell, int]
) -> float:
    """What the earlier greedy sampler recorded as a conversation's chance: 1 - prod over its
    cells of (1 - d_c / N_c), d_c the conversations drawn *for* cell c. That sampler chose
    conversations by how many short cells they filled, so this was not their real chance; it
    is kept only to rebuild the weights such studies recorded (alignment.services.design)."""
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
    return draw(plan_sample(candidates, size=size), seed=seed)


def plan_sample(candidates: Sequence[Candidate], *, size: int) -> Plan:
    """Strata and their draws from the population (the candidates) and the sample size."""
    pool = sorted(candidates, key=lambda c: c.conversation_id)
    cells_of = {c.conversation_id: c.cells() for c in pool}
    models = tuple(sorted({c.model for c in pool}))
    rubrics = tuple(sorted({r for c in pool for r in c.scores}))
    available = Counter(cell for cells in cells_of.values() for cell in cells)
    homes = {cid: home_cell(cells, available) for cid, cells in cells_of.items()}
    size = min(size, len(pool))
    keys = _stratum_keys(set(homes.values()), size)
    members: dict[str, list[int]] = defaultdict(list)
    for cid, home in homes.items():
        members[keys[home]].append(cid)
    cell_count = len(models) * len(rubrics) * len(BINS)
    wanted = max(1, size * len(rubrics) // cell_count) if cell_count else 1
    strata = _allocate(members, keys, cells_of, size=size, wanted=wanted)
    return Plan(
        Design(tuple(strata), dict(available)),
        dict(members),
        homes,
        cells_of,
        models,
        rubrics,
        wanted,
        _population(pool, cells_of),
    )


def draw(plan: Plan, *, seed: int) -> Sample:
    """Simple random samples without replacement within the strata, seeded. The picks are in
    rounds (every stratum's first draw, then every second draw, ...), strata in the design's
    order, so the sampling order puts the extremes first."""
    rng = random.Random(seed)
    chosen = [rng.sample(plan.members[s.key], s.drawn) for s in plan.design.strata]
    picks = [
        Pick(ids[round_], plan.homes[ids[round_]], stratum.key)
        for round_ in range(max(map(len, chosen), default=0))
        for stratum, ids in zip(plan.design.strata, chosen, strict=True)
        if round_ < len(ids)
    ]
    sampled = Counter(cell for pick in picks for cell in plan.cells_of[pick.conversation_id])
    return Sample(picks, plan, sampled)


def expected_per_cell(plan: Plan) -> Counter:
    """Conversations each cell is expected to get: the sum of its conversations' chances."""
    expected: Counter = Counter()
    for stratum in plan.design.strata:
        _expect(expected, plan.members[stratum.key], plan.cells_of, stratum.probability)
    return expected


def _population(pool: Sequence[Candidate], cells_of) -> dict[Cell, CellPopulation]:
    population: dict[Cell, CellPopulation] = {}
    for candidate in pool:
        for cell in cells_of[candidate.conversation_id]:
            score = candidate.scores[cell[1]]
            population.setdefault(cell, CellPopulation()).add(
                score, candidate.passes.get(cell[1], False)
            )
    return population


def _priority(cell: Cell) -> tuple:
    model, rubric, bin_ = cell
    return (BIN_PRIORITY.index(bin_), rubric, model)


def _stratum_keys(homes: set[Cell], size: int) -> dict[Cell, str]:
    """Home cell -> stratum key: a stratum per home cell when the sample can give each one
    draw; otherwise the first home cells (extremes first) keep theirs, as many as fit, and the
    rest are pooled by model and bin (or by model, or all together, when those do not fit)."""
    order = sorted(homes, key=_priority)
    if len(order) <= size:
        return {home: cell_label(home) for home in order}
    for pool in POOLS:
        for kept in range(size, -1, -1):
            pooled = {pool_key(home, pool) for home in order[kept:]}
            if kept + len(pooled) <= size:
                return {
                    home: cell_label(home) if rank < kept else pool_key(home, pool)
                    for rank, home in enumerate(order)
                }
    raise AssertionError("all conversations pooled together always fit a sample of one")


def _allocate(members, keys, cells_of, *, size: int, wanted: int) -> list[Stratum]:
    """The draws of every stratum (see the module docstring), `size` at most the population.
    Strata are ordered by their most extreme home cell."""
    cells_in: dict[str, list[Cell]] = defaultdict(list)
    for home in sorted(keys, key=_priority):
        cells_in[keys[home]].append(home)
    order = list(cells_in)
    sizes = {key: len(members[key]) for key in order}
    drawn = dict.fromkeys(order, 1)
    expected: Counter = Counter()
    for key in order:
        _expect(expected, members[key], cells_of, 1 / sizes[key])
    spent = len(order)
    fastest = _fastest_strata(members, cells_of, sizes)
    for goal in range(1, wanted + 1):
        for cell in sorted(fastest, key=_priority):
            if spent >= size or expected[cell] >= goal - 1e-9:
                continue
            key = next((k for k in fastest[cell] if drawn[k] < sizes[k]), None)
            if key is not None:
                drawn[key] += 1
                spent += 1
                _expect(expected, members[key], cells_of, 1 / sizes[key])
    _top_up(order, sizes, drawn, size - spent)
    return [Stratum(key, tuple(cells_in[key]), sizes[key], drawn[key]) for key in order]


def _fastest_strata(members, cells_of, sizes) -> dict[Cell, list[str]]:
    """Cell -> the strata holding some of its conversations, the share of a stratum's
    conversations lying in the cell (how much one more draw there raises the cell's expected
    count) largest first."""
    shares: dict[Cell, list[tuple[float, str]]] = defaultdict(list)
    for key, ids in members.items():
        inside = Counter(cell for cid in ids for cell in cells_of[cid])
        for cell, count in inside.items():
            shares[cell].append((-count / sizes[key], key))
    return {cell: [key for _, key in sorted(found)] for cell, found in shares.items()}


def _expect(expected: Counter, members: list[int], cells_of, chance: float) -> None:
    """A stratum's draws raise each of its conversations' chance (by 1 / N_h a draw)."""
    for cid in members:
        for cell in cells_of[cid]:
            expected[cell] += chance


def _top_up(order: list[str], sizes: dict, drawn: dict, left: int) -> None:
    """Each draw left to the stratum whose conversations would stand for the most others."""
    heap = [
        (-sizes[k] / (drawn[k] + 1), rank, k) for rank, k in enumerate(order) if drawn[k] < sizes[k]
    ]
    heapq.heapify(heap)
    while left > 0 and heap:
        _, rank, key = heapq.heappop(heap)
        drawn[key] += 1
        left -= 1
        if drawn[key] < sizes[key]:
            heapq.heappush(heap, (-sizes[key] / (drawn[key] + 1), rank, key))
