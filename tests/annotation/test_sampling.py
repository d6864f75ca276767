"""The stratified sampler on constructed data (pure: no database)."""

import random
from collections import Counter

import pytest

from annotation.engine.sampling import (
    BINS,
    Candidate,
    inclusion_probability,
    item_weight,
    score_bin,
    stratified_sample,
)

MODELS = ("model-a", "model-b")
RUBRICS = ("safety", "triage")


def pool(per_model: int = 60, seed: int = 3, skew: float = 0.0) -> list[Candidate]:
    """Conversations whose scores pile up in the middle, as real jury scores do."""
    rng = random.Random(seed)
    candidates, next_id = [], 1
    for model in MODELS:
        for _ in range(per_model):
            scores = {r: min(5, max(1, round(rng.gauss(3.2 + skew, 0.9)))) for r in RUBRICS}
            candidates.append(Candidate(next_id, model, scores))
            next_id += 1
    return candidates


def test_bins_round_halves_up_and_stay_in_range():
    assert [score_bin(s) for s in (0.2, 1.49, 1.5, 2.5, 4.6, 5.0, 7)] == [1, 1, 2, 3, 5, 5, 5]


def test_every_stratum_with_data_is_hit_when_the_sample_allows_it():
    candidates = pool()
    sample = stratified_sample(candidates, size=24, seed=1)
    present = {cell for c in candidates for cell in c.cells()}
    assert all(sample.sampled[cell] >= 1 for cell in present)
    assert len(sample.picks) == 24


def test_extremes_are_drawn_before_the_middle():
    sample = stratified_sample(pool(), size=40, seed=1)
    first_bins = [pick.cell[2] for pick in sample.picks[:4]]
    assert set(first_bins) <= {1, 5}
    assert sample.picks[0].cell[2] == 1


def test_the_same_seed_gives_the_same_sample_and_another_seed_another():
    candidates = pool()
    first = [p.conversation_id for p in stratified_sample(candidates, size=20, seed=7).picks]
    again = [p.conversation_id for p in stratified_sample(candidates[::-1], size=20, seed=7).picks]
    other = [p.conversation_id for p in stratified_sample(candidates, size=20, seed=8).picks]
    assert first == again
    assert first != other


def test_strata_without_conversations_are_named_as_shortfalls():
    candidates = [c for c in pool() if not (c.model == "model-b" and c.scores["safety"] == 1)]
    sample = stratified_sample(candidates, size=30, seed=1)
    missing = [s for s in sample.shortfalls() if s["available"] == 0]
    assert {"model": "model-b", "rubric": "safety", "bin": 1, "available": 0, "sampled": 0,
            "wanted": sample.wanted_per_cell} in missing  # fmt: skip


def test_a_sample_larger_than_the_pool_takes_everything_once():
    candidates = pool(per_model=5)
    sample = stratified_sample(candidates, size=50, seed=1)
    ids = [p.conversation_id for p in sample.picks]
    assert sorted(ids) == sorted(c.conversation_id for c in candidates)


def test_coverage_counts_every_cell_of_every_model_and_rubric():
    coverage = stratified_sample(pool(), size=10, seed=1).coverage()
    assert len(coverage["cells"]) == len(MODELS) * len(RUBRICS) * len(BINS)
    assert sum(c["sampled"] for c in coverage["cells"]) == 10 * len(RUBRICS)


def test_the_stratified_sample_spreads_scores_wider_than_a_random_one():
    candidates = pool(per_model=200)
    stratified = stratified_sample(candidates, size=30, seed=2)
    random_pick = random.Random(2).sample(candidates, 30)
    extremes = sum(1 for p in stratified.picks
                   for s in next(c for c in candidates if c.conversation_id == p.conversation_id)
                   .scores.values() if s in (1, 5))  # fmt: skip
    random_extremes = sum(1 for c in random_pick for s in c.scores.values() if s in (1, 5))
    assert extremes > random_extremes


# --- the design recorded for weighting (inclusion probabilities) ---------------------------


def _by_id(candidates):
    return {c.conversation_id: c for c in candidates}


def test_draws_are_counted_for_the_cell_each_conversation_was_drawn_for():
    sample = stratified_sample(pool(), size=24, seed=1)
    assert sum(sample.drawn.values()) == 24
    assert sample.drawn == Counter(pick.cell for pick in sample.picks)
    assert all(sample.drawn[cell] <= sample.sampled[cell] for cell in sample.drawn)


def test_the_inclusion_probability_is_the_chance_of_entering_through_any_of_its_cells():
    candidates = pool()
    sample = stratified_sample(candidates, size=24, seed=1)
    for pick in sample.picks[:10]:
        candidate = _by_id(candidates)[pick.conversation_id]
        missed = 1.0
        for cell in candidate.cells():  # one cell per rubric
            missed *= 1 - sample.drawn[cell] / sample.available[cell]
        assert sample.inclusion_probability(candidate) == pytest.approx(1 - missed, abs=1e-15)
        assert 0 < sample.inclusion_probability(candidate) <= 1


def test_a_conversation_drawn_from_a_cell_taken_whole_stands_for_itself_only():
    candidates = pool(per_model=5)
    sample = stratified_sample(candidates, size=50, seed=1)  # everything is taken
    for candidate in candidates:
        probability = sample.inclusion_probability(candidate)
        assert any(sample.drawn[cell] == sample.available[cell] for cell in candidate.cells()) \
            == (probability == 1.0)  # fmt: skip
    whole = [c for c in candidates if sample.inclusion_probability(c) == 1.0]
    assert whole and all(item_weight(sample.inclusion_probability(c)) == 1.0 for c in whole)


def test_the_formula_multiplies_the_misses_of_each_cell():
    cells = [("m", "safety", 1), ("m", "triage", 3)]
    available = {cells[0]: 4, cells[1]: 10}
    drawn = {cells[0]: 1, cells[1]: 2}
    # Missed through both: (3/4) * (8/10) = 0.6, so entered with probability 0.4.
    assert inclusion_probability(cells, available=available, drawn=drawn) == pytest.approx(0.4)
    assert item_weight(0.4) == pytest.approx(2.5)
    assert inclusion_probability(cells, available=available, drawn={}) == 0.0
    assert item_weight(0.0) is None and item_weight(None) is None


def test_coverage_records_draws_and_the_populations_jury_scores_per_cell():
    candidates = [
        Candidate(c.conversation_id, c.model, c.scores, {r: s >= 3 for r, s in c.scores.items()})
        for c in pool()
    ]
    coverage = stratified_sample(candidates, size=20, seed=4).coverage()
    for cell in coverage["cells"][:12]:
        key = (cell["model"], cell["rubric"], cell["bin"])
        inside = [c for c in candidates if key in c.cells()]
        scores = [c.scores[cell["rubric"]] for c in inside]
        assert cell["available"] == len(inside)
        assert cell["jury_sum"] == pytest.approx(sum(scores))
        assert cell["jury_squares"] == pytest.approx(sum(s * s for s in scores))
        assert cell["passed"] == sum(c.passes[cell["rubric"]] for c in inside)
    assert sum(cell["drawn"] for cell in coverage["cells"]) == 20
