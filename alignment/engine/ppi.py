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

Kept on the scale (jury.engine.intervals.bounded): the estimate is a sum of two terms, so on a
few conversations it can leave the scale (one conversation the jury failed and the clinicians
passed adds 100 points to a pass rate near 100%). Every figure and interval is cut at the ends
of its scale (1-5 for means, 0-100% for pass rates), saying so; the jury's own pass rate over
the population is a count, with its Wilson interval. Below MIN_ANNOTATED annotated
conversations no corrected figure is given at all: the correction's variance, estimated from
so few, would make the normal interval a guess. `method` says how each figure was made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from alignment.engine.bootstrap import CONFIDENCE, Estimate, undefined
from alignment.engine.design import design_variance, hajek_mean
from jury.engine.intervals import (
    SCORE,
    SCORE_DIFFERENCE,
    SHARE,
    Interval,
    Scale,
    interval_note,
    normal_interval,
)
from jury.engine.stats import wilson_interval

# Fewer annotated conversations of a model and rubric than this: no corrected figure.
MIN_ANNOTATED = 10


@dataclass(frozen=True)
class Population:
    """The jury's scores over every conversation of the population (one model, one rubric)."""

    n: int
    jury_sum: float
    jury_squares: float
    passed: int

    def __post_init__(self) -> None:
        if not 0 <= self.passed <= self.n:
            raise ValueError(f"{self.passed} of a population of {self.n} cannot have passed")


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
    jury_pass: Estimate  # over the population, with its Wilson interval
    corrected_pass: Estimate
    n_population: int
    n_annotated: int
    method: str = ""  # how the corrected figures were made, or why there are none


@dataclass(frozen=True)
class _Term:
    """A figure and its standard error, before it is put on its scale."""

    value: float
    se: float


def undefined_score(
    reason: str,
    *,
    jury_mean: Estimate | None = None,
    jury_pass: Estimate | None = None,
    n_population: int = 0,
    n_annotated: int = 0,
) -> CorrectedScore:
    """A corrected score that cannot be computed (the reason on every figure that needs the
    clinicians); the jury-only figures are kept when they are known."""
    missing = undefined(reason, n_items=n_annotated)
    return CorrectedScore(
        jury_mean=jury_mean or undefined(reason),
        corrected_mean=missing,
        correction=missing,
        jury_pass=jury_pass or undefined(reason),
        corrected_pass=missing,
        n_population=n_population,
        n_annotated=n_annotated,
        method=reason,
    )


def population_figures(population: Population, *, confidence: float = CONFIDENCE):
    """(jury mean, jury pass rate) over the population: the mean with its normal interval on
    the 1-5 scale, the pass rate (a count) with its Wilson interval."""
    if population.n == 0:
        reason = "no conversation of this model was scored on this rubric"
        return undefined(reason), undefined(reason)
    mean, passes = _population_terms(population)
    low, high = wilson_interval(population.passed, population.n, confidence)
    n = population.n
    return (
        _estimate(mean, SCORE, _z(confidence), n, 0),
        _on_scale(Interval(passes.value, low, high, interval_note(n, low, high)), n, 0),
    )


def corrected_score(
    population: Population,
    annotated: Annotated,
    *,
    confidence: float = CONFIDENCE,
    min_annotated: int = MIN_ANNOTATED,
) -> CorrectedScore:
    """The jury-only and the clinician-corrected mean and pass rate of one model on one
    rubric. Undefined with the reason when the population is empty or fewer than
    `min_annotated` of its conversations are annotated."""
    z = _z(confidence)
    jury_mean, jury_pass = population_figures(population, confidence=confidence)
    n = len(annotated)
    if population.n == 0 or n < max(1, min_annotated):
        return undefined_score(
            _too_few(population, n, min_annotated),
            jury_mean=jury_mean,
            jury_pass=jury_pass,
            n_population=population.n,
            n_annotated=n,
        )
    mean, passes = _population_terms(population)
    difference = annotated.clinician - annotated.jury
    pass_difference = annotated.clinician_pass.astype(float) - annotated.jury_pass.astype(float)
    correction = _weighted(difference, annotated)
    pass_correction = _weighted(pass_difference, annotated)
    ratings = annotated.ratings
    return CorrectedScore(
        jury_mean=jury_mean,
        corrected_mean=_estimate(_sum(mean, correction), SCORE, z, n, ratings),
        correction=_estimate(correction, SCORE_DIFFERENCE, z, n, ratings),
        jury_pass=jury_pass,
        corrected_pass=_estimate(_sum(passes, pass_correction), SHARE, z, n, ratings),
        n_population=population.n,
        n_annotated=n,
        method=_method(population.n, n, min_annotated, confidence),
    )


def _too_few(population: Population, n: int, min_annotated: int) -> str:
    if population.n == 0:
        return "no conversation of this model was scored on this rubric"
    if n == 0:
        return "no conversation of this model has a clinician score on this rubric"
    return (
        f"{n} annotated conversation{'s' if n != 1 else ''} of this model on this rubric; "
        f"a corrected figure needs at least {min_annotated}"
    )


def _method(n_population: int, n: int, min_annotated: int, confidence: float) -> str:
    return (
        f"prediction-powered: the jury's figure over N = {n_population} conversations plus "
        f"the design-weighted clinician - jury difference over n = {n} annotated; "
        f"{confidence:.0%} normal interval, cut at the ends of the scale; shown from "
        f"n = {min_annotated}"
    )


def _z(confidence: float) -> float:
    return float(scipy_stats.norm.ppf(0.5 + confidence / 2))


def _population_terms(population: Population) -> tuple[_Term, _Term]:
    """The jury's mean and pass rate over the population, each with its standard error."""
    n = population.n
    mean = population.jury_sum / n
    share = population.passed / n
    return (
        _Term(mean, math.sqrt(max(population.jury_squares / n - mean * mean, 0.0) / n)),
        _Term(share, math.sqrt(share * (1 - share) / n)),
    )


def _weighted(values: np.ndarray, annotated: Annotated) -> _Term:
    variance = design_variance(values, annotated.weights, annotated.strata)
    return _Term(hajek_mean(values, annotated.weights), math.sqrt(variance))


def _sum(base: _Term, correction: _Term) -> _Term:
    return _Term(base.value + correction.value, math.hypot(base.se, correction.se))


def _estimate(term: _Term, scale: Scale, z: float, n: int, ratings: int) -> Estimate:
    return _on_scale(normal_interval(term.value, term.se, scale=scale, quantile=z, n=n), n, ratings)


def _on_scale(interval: Interval, n: int, ratings: int) -> Estimate:
    return Estimate(interval.value, interval.low, interval.high, n, ratings, note=interval.note)
