"""Clinician-corrected model scores: prediction-powered inference (Angelopoulos et al.,
Science 2023).

Question: what mean rubric score (or pass rate) would clinicians give a model over every
conversation the benchmark produced, when clinicians scored only a sample of them and the jury
scored all? Estimate = the jury's mean over the N conversations of the population + the
design-weighted mean of (clinician - jury) over the n annotated ones (clinician = the mean of the
conversation's clinician scores). The jury may be biased in any direction: the second term
measures and removes its bias, so the estimate is valid whatever the jury does, and its
interval is narrower than clinicians alone would give when the jury tracks them.

Interval (normal approximation, 95%): estimate +/- z * sqrt(var_jury / N + v), with var_jury the
jury's variance over the population (divided by N, as ppi-python does) and v the design variance
of the weighted correction (design.design_variance: stratified, with the usual n_h / (n_h - 1)
factor; on an unstratified, equally weighted sample that is s^2 / n with s^2 divided by n - 1,
where ppi-python divides by n). The population is summarised by sums (jury scores, their
squares, passes), which the sampler records per cell, so the figure needs no conversation
outside the study. A pass rate is the same with 0/1 indicators: the jury's verdict, and the
clinicians' mean reaching the pass threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from alignment.engine.bootstrap import CONFIDENCE, Estimate, undefined
from alignment.engine.design import design_variance, hajek_mean


@dataclass(frozen=True)
class Population:
    """The jury's scores over every conversation of the population (one model, one rubric)."""

    n: int
    jury_sum: float
    jury_squares: float
    passed: int


@dataclass(frozen=True)
class Annotated:
    """The annotated conversations of the same model and rubric, aligned arrays."""

    clinician: np.ndarray  # mean clinician score per conversation
    jury: np.ndarray  # jury mean
    clinician_pass: np.ndarray  # 0/1: the clinicians' mean reaches the pass threshold
    jury_pass: np.ndarray  # 0/1: the jury's verdict
    weights: np.ndarray  # 1 / inclusion probability
    strata: np.ndarray  # the conversation's cell of this rubric
    ratings: int  # clinician ratings behind the clinician means

    def __len__(self) -> int:
        return len(self.clinician)


@dataclass(frozen=True)
class CorrectedScore:
    jury_mean: Estimate  # over the population, with its normal interval
    corrected_mean: Estimate  # the jury's mean corrected by the clinicians
    correction: Estimate  # design-weighted mean of (clinician - jury) on the sample
    jury_pass: Estimate
    corrected_pass: Estimate
    n_population: int
    n_annotated: int


def undefined_score(reason: str, *, jury_mean: Estimate | None = None,
                    jury_pass: Estimate | None = None, n_population: int = 0,
                    n_annotated: int = 0) -> CorrectedScore:  # fmt: skip
    """A corrected score that cannot be computed (the reason on every figure that needs the
    clinicians); the jury-only figures are kept when they are known."""
    missing = undefined(reason, n_items=n_annotated)
    return CorrectedScore(
        jury_mean=jury_mean or undefined(reason), corrected_mean=missing, correction=missing,
        jury_pass=jury_pass or undefined(reason), corrected_pass=missing,
        n_population=n_population, n_annotated=n_annotated,
    )  # fmt: skip


def population_figures(population: Population, *, confidence: float = CONFIDENCE):
    """(jury mean, jury pass rate) over the population, with their normal intervals."""
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    return (
        _population_mean(population.jury_sum, population.jury_squares, population.n, z),
        _population_mean(population.passed, population.passed, population.n, z),
    )


def corrected_score(
    population: Population, annotated: Annotated, *, confidence: float = CONFIDENCE
) -> CorrectedScore:
    """The jury-only and the clinician-corrected mean and pass rate of one model on one
    rubric. Undefined with the reason when the population or the annotated sample is empty."""
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    jury_mean, jury_pass = population_figures(population, confidence=confidence)
    if population.n == 0:
        reason = "no conversation of this model was scored on this rubric"
        return CorrectedScore(jury_mean, undefined(reason), undefined(reason), jury_pass,
                              undefined(reason), 0, len(annotated))  # fmt: skip
    if len(annotated) == 0:
        reason = "no conversation of this model has a clinician score on this rubric"
        return CorrectedScore(jury_mean, undefined(reason), undefined(reason), jury_pass,
                              undefined(reason), population.n, 0)  # fmt: skip
    difference = annotated.clinician - annotated.jury
    passes = annotated.clinician_pass.astype(float) - annotated.jury_pass.astype(float)
    n, ratings = len(annotated), annotated.ratings
    correction = _weighted(difference, annotated, z, n, ratings)
    pass_correction = _weighted(passes, annotated, z, n, ratings)
    return CorrectedScore(
        jury_mean=jury_mean,
        corrected_mean=_sum(jury_mean, correction, z, n, ratings),
        correction=correction,
        jury_pass=jury_pass,
        corrected_pass=_sum(jury_pass, pass_correction, z, n, ratings),
        n_population=population.n,
        n_annotated=n,
    )


def _population_mean(total: float, squares: float, n: int, z: float) -> Estimate:
    if n == 0:
        return undefined("no conversation of this model was scored on this rubric")
    mean = total / n
    se = math.sqrt(max(squares / n - mean * mean, 0.0) / n)
    return Estimate(mean, mean - z * se, mean + z * se, n, 0)


def _weighted(values: np.ndarray, annotated: Annotated, z: float, n: int, ratings: int):
    mean = hajek_mean(values, annotated.weights)
    variance = design_variance(values, annotated.weights, annotated.strata)
    if not math.isfinite(variance):
        return Estimate(mean, None, None, n, ratings, "", 0)
    se = math.sqrt(variance)
    return Estimate(mean, mean - z * se, mean + z * se, n, ratings)


def _sum(base: Estimate, correction: Estimate, z: float, n: int, ratings: int) -> Estimate:
    value = base.value + correction.value
    if correction.low is None:  # one annotated conversation: no spread to measure
        return Estimate(value, None, None, n, ratings)
    se_base = (base.high - base.value) / z
    se_correction = (correction.high - correction.value) / z
    se = math.sqrt(se_base**2 + se_correction**2)
    return Estimate(value, value - z * se, value + z * se, n, ratings)
