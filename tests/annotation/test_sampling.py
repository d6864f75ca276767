"""The stratified sampler on constructed data (pure: no database)."""

import random
from collections import Counter

import pytest

from annotation.engine.sampling import (
    BINS,
    Candidate,
    Design,
    greedy_inclusion_probability,
    home_cell,
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


def test_every_conversation_belongs_to_one_stratum_and_its_chance_is_n_over_N():
    candidates = pool()
    sample = stratified_sample(candidates, size=24, seed=1)
    strata = sample.design.strata
    assert sum(s.size for s in strata) == len(candidates)
    assert sum(s.drawn for s in strata) == len(sample.picks) == 24
    homes = [cell for s in strata for cell in s.cells]
    assert len(homes) == len(set(homes)), "a home cell lies in one stratum"
    taken = Counter(pick.stratum for pick in sample.picks)
    assert taken == {s.key: s.drawn for s in strata}
    for candidate in candidates:
        stratum = sample.design.stratum_of(candidate)
        assert sample.inclusion_probability(candidate) == stratum.drawn / stratum.size
    assert sum(map(sample.inclusion_probability, candidates)) == pytest.approx(24)


def test_a_conversations_home_is_its_rarest_cell_extremes_first_on_ties():
    available = {("m", "safety", 3): 40, ("m", "triage", 1): 6, ("m", "workflow", 5): 6}
    assert home_cell(available, available) == ("m", "triage", 1)
    available[("m", "safety", 3)] = 2
    assert home_cell(available, available) == ("m", "safety", 3)


def test_every_extreme_cell_of_the_data_gets_a_draw_of_its_own_stratum():
    candidates = pool(per_model=200)
    sample = stratified_sample(candidates, size=60, seed=5)
    own = {s.cells[0]: s for s in sample.design.strata if len(s.cells) == 1}
    extremes = {cell for c in candidates for cell in c.cells() if cell[2] in (1, 5)}
    assert extremes <= set(own) and all(own[cell].drawn >= 1 for cell in extremes)
    assert all(sample.sampled[cell] >= 1 for cell in extremes)


def test_a_sample_smaller_than_the_strata_pools_the_common_cells_and_leaves_nobody_out():
    candidates = pool(per_model=200)
    sample = stratified_sample(candidates, size=8, seed=1)
    strata = sample.design.strata
    assert len(strata) <= 8 and sum(s.drawn for s in strata) == 8
    assert any(len(s.cells) > 1 and "other cells" in s.key for s in strata)
    assert strata[0].cells[0][2] == 1, "the rarest extremes keep a stratum of their own"
    assert all(sample.inclusion_probability(c) > 0 for c in candidates)
    assert sum(map(sample.inclusion_probability, candidates)) == pytest.approx(8)


def test_a_sample_of_the_whole_pool_takes_every_conversation_for_certain():
    candidates = pool(per_model=5)
    sample = stratified_sample(candidates, size=50, seed=1)  # everything is taken
    assert all(sample.inclusion_probability(c) == 1.0 for c in candidates)
    assert all(item_weight(sample.inclusion_probability(c)) == 1.0 for c in candidates)


def test_the_recorded_design_gives_back_every_conversations_chance():
    candidates = pool()
    sample = stratified_sample(candidates, size=30, seed=2)
    design = Design.from_coverage(sample.coverage())
    assert design.strata == sample.design.strata
    for candidate in candidates:
        assert design.probability(candidate) == sample.inclusion_probability(candidate)
    assert Design.from_coverage({"cells": []}) is None  # a study drawn before the design


def test_the_greedy_samplers_formula_is_kept_for_the_studies_it_drew():
    cells = [("m", "safety", 1), ("m", "triage", 3)]
    available = {cells[0]: 4, cells[1]: 10}
    drawn = {cells[0]: 1, cells[1]: 2}
    # Missed through both: (3/4) * (8/10) = 0.6, so recorded as 0.4.
    assert greedy_inclusion_probability(cells, available=available, drawn=drawn) == (
        pytest.approx(0.4)
    )
    assert item_weight(0.4) == pytest.approx(2.5)
    assert greedy_inclusion_probability(cells, available=available, drawn={}) == 0.0
    assert item_weight(0.0) is None and item_weight(None) is None


def test_coverage_records_what_each_cell_got_and_expected_and_the_populations_jury_scores():
    candidates = [
        Candidate(c.conversation_id, c.model, c.scores, {r: s >= 3 for r, s in c.scores.items()})
        for c in pool()
    ]
    sample = stratified_sample(candidates, size=20, seed=4)
    coverage = sample.coverage()
    for cell in coverage["cells"][:12]:
        key = (cell["model"], cell["rubric"], cell["bin"])
        inside = [c for c in candidates if key in c.cells()]
        scores = [c.scores[cell["rubric"]] for c in inside]
        assert cell["available"] == len(inside)
        assert cell["expected"] == pytest.approx(sum(map(sample.inclusion_probability, inside)))
        assert cell["jury_sum"] == pytest.approx(sum(scores))
        assert cell["jury_squares"] == pytest.approx(sum(s * s for s in scores))
        assert cell["passed"] == sum(c.passes[cell["rubric"]] for c in inside)
    assert sum(cell["expected"] for cell in coverage["cells"]) == pytest.approx(20 * len(RUBRICS))
    assert sum(s["drawn"] for s in coverage["design"]["strata"]) == 20
