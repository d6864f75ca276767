"""The study sampler's recorded inclusion probabilities are the chances it really draws with:
checked by simulation over 500 seeds at two population sizes (pure: no database).

The variable estimated is each conversation's latent quality, which drives its jury scores and
so the strata: the plain sample mean is far off (the sample over-represents the extremes on
purpose), the weighted one must not be."""

import numpy as np
import pytest

from annotation.engine.sampling import Candidate, draw, plan_sample, stratified_sample
from annotation.engine.second_phase import combined_probability, second_phase_draw

SEEDS = 500
MODELS = ("model-a", "model-b", "model-c")
RUBRICS = ("safety", "triage", "workflow")
QUALITY = {"model-a": 2.4, "model-b": 3.3, "model-c": 4.0}
# (population, first-phase sample, second-phase draws)
SIZES = [(600, 80, 30), (200, 40, 15)]


def population(size: int, seed: int = 11) -> tuple[list[Candidate], np.ndarray]:
    """Conversations with jury means in thirds (three judges) around their model's quality,
    and the quality itself: the value a study wants to estimate over the population."""
    rng = np.random.default_rng(seed)
    candidates, quality = [], []
    for index in range(size):
        model = MODELS[index % len(MODELS)]
        latent = rng.normal(QUALITY[model], 0.9)
        scores = {
            rubric: float(np.clip(np.round((latent + rng.normal(0, 0.7)) * 3) / 3, 1, 5))
            for rubric in RUBRICS
        }
        candidates.append(Candidate(index, model, scores))
        quality.append(latent)
    return candidates, np.array(quality)


def hajek(values: np.ndarray, ids: np.ndarray, probability: np.ndarray) -> np.ndarray:
    """Per simulated sample (rows of ids, -1 = no item): sum(y / pi) / sum(1 / pi)."""
    present = ids >= 0
    weights = np.where(present, 1 / probability[np.maximum(ids, 0)], 0.0)
    return (weights * values[np.maximum(ids, 0)]).sum(axis=1) / weights.sum(axis=1)


def assert_unbiased(estimates: np.ndarray, truth: float) -> None:
    error = estimates.std(ddof=1) / np.sqrt(len(estimates))  # Monte Carlo standard error
    assert abs(estimates.mean() - truth) <= 2 * error, (estimates.mean() - truth, error)


def assert_frequencies_match(counts: np.ndarray, probability: np.ndarray) -> None:
    """Each conversation is drawn as often as its probability says, within 4.5 binomial
    standard deviations (over a few hundred conversations a correct design stays inside)."""
    frequency = counts / SEEDS
    spread = np.sqrt(probability * (1 - probability) / SEEDS)
    assert np.all(np.abs(frequency - probability) <= 4.5 * spread + 1e-12)


@pytest.mark.parametrize(("size", "sample_size", "_draws"), SIZES)
def test_the_first_phase_draws_every_conversation_with_its_recorded_probability(
    size, sample_size, _draws
):
    candidates, quality = population(size)
    plan = plan_sample(candidates, size=sample_size)
    for seed in (0, 1):  # the study's sampler is this plan and this draw
        assert stratified_sample(candidates, size=sample_size, seed=seed).picks == (
            draw(plan, seed=seed).picks
        )
    ids = np.full((SEEDS, sample_size), -1)
    recorded = np.full(size, np.nan)
    for seed in range(SEEDS):
        sample = draw(plan, seed=seed)
        picked = [pick.conversation_id for pick in sample.picks]
        ids[seed] = picked
        for cid in picked:  # what the study records for each item it draws
            probability = sample.inclusion_probability(candidates[cid])
            assert recorded[cid] in (probability,) or np.isnan(recorded[cid])
            recorded[cid] = probability
    probability = np.array([plan.design.probability(c) for c in candidates])
    drawn = ~np.isnan(recorded)
    assert np.array_equal(recorded[drawn], probability[drawn])

    assert probability.sum() == pytest.approx(sample_size, abs=1e-9)
    assert np.all(probability > 0), "every conversation can be drawn"
    assert_frequencies_match(np.bincount(ids.ravel(), minlength=size), probability)
    assert_unbiased(hajek(quality, ids, probability), quality.mean())
    plain = quality[ids].mean(axis=1)
    assert abs(plain.mean() - quality.mean()) > 10 * plain.std(ddof=1) / np.sqrt(SEEDS)


@pytest.mark.parametrize(("size", "sample_size", "draws"), SIZES)
def test_a_second_phase_keeps_every_recorded_probability_exact(size, sample_size, draws):
    candidates, quality = population(size)
    plan = plan_sample(candidates, size=sample_size)
    # Larger where the jury's safety mean lies near the pass threshold of 3, as the study's
    # second phase sizes them; every size above zero.
    sizes = {c.conversation_id: 0.1 + max(0.0, 1 - abs(c.scores["safety"] - 3) / 2)
             for c in candidates}  # fmt: skip
    first = np.array([plan.design.probability(c) for c in candidates])
    ids = np.full((SEEDS, sample_size + draws), -1)
    second = None
    for seed in range(SEEDS):
        taken = [pick.conversation_id for pick in draw(plan, seed=seed).picks]
        second = second_phase_draw(sizes, taken=set(taken), draws=draws, seed=seed)
        study = taken + second.added
        ids[seed, : len(study)] = study
    probability = np.array([
        combined_probability(first[c.conversation_id], second.probability(sizes[c.conversation_id]))
        for c in candidates
    ])  # fmt: skip

    counts = np.bincount(ids[ids >= 0], minlength=size)
    assert_frequencies_match(counts, probability)
    assert_unbiased(hajek(quality, ids, probability), quality.mean())
    study_sizes = (ids >= 0).sum(axis=1)
    error = study_sizes.std(ddof=1) / np.sqrt(SEEDS)
    assert abs(study_sizes.mean() - probability.sum()) <= 3 * error
