"""The figures of coverage (CIA): recall, precision and F1 with their intervals, per axis, and
the comparison of two arms on the same expert criteria.

Recall is the share of expert constraints the generated rubric entails; precision the share of
generated criteria that entail at least one expert constraint; F1 their harmonic mean. Overall
figures are pooled over every constraint and criterion (micro) and also given as the mean of
the per-case figures (macro); per axis, recall counts the constraints of the expert criteria on
the axis and precision the generated criteria on it, both sides named in one vocabulary
(rubric_lab.engine.axes), so each axis has all three figures.

Constraints of one conversation are not independent: the same rubric is judged against all of
them, so a rubric that misses one point of a case tends to miss its neighbours. Every interval
and test here therefore treats the conversation (one case of a coverage run) as the unit:

- Intervals: a cluster bootstrap (rubric_lab.engine.sensitivity's `cluster_weights`, seeded):
  each resample draws conversations with replacement, each with all its constraints and
  criteria, and recomputes the pooled figure; 95% percentile interval of 1,000 resamples.
- Two arms: McNemar's test adjusted for clustering (Durkalski, Palesch, Lipsitz and Rust 2003,
  "Analysis of clustered matched-pair data", Stat Med 22:2417). With d_k the constraints of
  conversation k entailed by arm A only minus those entailed by arm B only,
  X^2 = (sum of d_k)^2 / (sum of d_k^2), one degree of freedom. With one constraint per
  conversation it is McNemar's statistic (no continuity correction). When fewer than 25
  conversations have d_k != 0 the chi-square is a poor approximation and the p value is the
  exact randomization one instead: under the null the two arms are exchangeable within a
  conversation, so each d_k is as likely to have either sign; p = P(|sum of +-d_k| >= |sum
  of d_k|) over the 2^K sign patterns (which, with one constraint per conversation, is the
  exact binomial McNemar test). The difference in recall (A - B) and each arm's recall get
  cluster bootstrap intervals from the same draws.

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

from rubric_lab.engine.sensitivity import (
    CONFIDENCE,
    RESAMPLES,
    Estimate,
    cluster_weights,
    percentile_interval,
)

EXACT_BELOW = 25  # conversations whose constraints the two arms split unevenly


@dataclass(frozen=True)
class Coverage:
    constraints: int
    entailed: int
    generated: int
    matched: int

    @property
    def recall(self) -> float | None:
        return self.entailed / self.constraints if self.constraints else None

    @property
    def precision(self) -> float | None:
        return self.matched / self.generated if self.generated else None

    @property
    def f1(self) -> float | None:
        return f1(self.recall, self.precision)


def f1(recall: float | None, precision: float | None) -> float | None:
    if recall is None or precision is None:
        return None
    return 0.0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)


@dataclass(frozen=True)
class Intervals:
    """Pooled recall, precision and F1, each with its cluster bootstrap interval (None when
    the figure itself is undefined)."""

    recall: Estimate | None
    precision: Estimate | None
    f1: Estimate | None


def pooled_intervals(
    cases: Sequence[Coverage],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Intervals:
    """Pooled figures of `cases` (one per conversation) with percentile intervals from a
    bootstrap that draws whole cases."""
    counts = np.array([[c.constraints, c.entailed, c.generated, c.matched] for c in cases], float)
    weights = cluster_weights(range(len(cases)), resamples=resamples, seed=seed)
    constraints, entailed, generated, matched = (weights @ counts).T
    with np.errstate(divide="ignore", invalid="ignore"):
        recall, precision = entailed / constraints, matched / generated
        harmonic = np.where(
            recall + precision == 0, 0.0, 2 * recall * precision / (recall + precision)
        )
    pooled = Coverage(*counts.sum(axis=0).astype(int))
    return Intervals(
        recall=_estimate(pooled.recall, recall, confidence),
        precision=_estimate(pooled.precision, precision, confidence),
        f1=_estimate(pooled.f1, harmonic, confidence),
    )


def _estimate(value: float | None, draws: np.ndarray, confidence: float) -> Estimate | None:
    """The figure and the percentile interval of its defined resamples (a resample may hold no
    constraint of an axis, say, and then has no recall)."""
    defined = draws[np.isfinite(draws)]
    if value is None or not len(defined):
        return None
    low, high = percentile_interval(defined, confidence)
    return Estimate(float(value), low, high)


@dataclass(frozen=True)
class Overall:
    cases: int
    micro: Coverage
    macro_recall: float | None
    macro_precision: float | None
    macro_f1: float | None
    intervals: Intervals  # of the micro figures


def overall(cases: Sequence[Coverage], *, seed: int = 0) -> Overall:
    micro = Coverage(
        constraints=sum(c.constraints for c in cases),
        entailed=sum(c.entailed for c in cases),
        generated=sum(c.generated for c in cases),
        matched=sum(c.matched for c in cases),
    )
    return Overall(
        cases=len(cases),
        micro=micro,
        macro_recall=_mean([c.recall for c in cases]),
        macro_precision=_mean([c.precision for c in cases]),
        macro_f1=_mean([c.f1 for c in cases]),
        intervals=pooled_intervals(cases, seed=seed),
    )


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class AxisCoverage(Coverage):
    """Pooled counts on one axis: constraints of the expert criteria on it, generated criteria
    on it, and the figures' intervals."""

    axis: str = ""
    intervals: Intervals | None = None


def axis_coverage(
    entailed: Iterable[tuple[Hashable, str, bool]],
    matched: Iterable[tuple[Hashable, str, bool]],
    *,
    seed: int = 0,
) -> list[AxisCoverage]:
    """Per axis, from (case, axis, entailed) for every expert constraint and (case, axis,
    matched) for every generated criterion; axes in alphabetical order, "" (no axis) last.
    The intervals resample the same cases (every case, with or without the axis) for every
    axis, as they do overall."""
    counts: dict[str, dict[Hashable, list[int]]] = {}
    cases: dict[Hashable, None] = {}
    for offset, triples in ((0, entailed), (2, matched)):
        for case, axis, hit in triples:
            cases.setdefault(case)
            row = counts.setdefault(axis, {}).setdefault(case, [0, 0, 0, 0])
            row[offset] += 1
            row[offset + 1] += bool(hit)
    rows = []
    for axis in sorted(counts, key=lambda axis: (axis == "", axis)):
        per_case = [Coverage(*counts[axis].get(case, (0, 0, 0, 0))) for case in cases]
        pooled = np.sum([[c.constraints, c.entailed, c.generated, c.matched] for c in per_case], 0)
        rows.append(
            AxisCoverage(
                *map(int, pooled), axis=axis, intervals=pooled_intervals(per_case, seed=seed)
            )
        )
    return rows


# --- two arms on the same constraints -------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    """Paired constraints of `clusters` conversations: entailed by both arms, by A only, by B
    only, by neither; Durkalski's cluster-adjusted statistic and its p value."""

    both: int
    only_a: int
    only_b: int
    neither: int
    clusters: int
    statistic: float
    p_value: float
    exact: bool  # p from the exact sign-flip distribution; else chi-square, one df

    @property
    def pairs(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def recall_a(self) -> float | None:
        return (self.both + self.only_a) / self.pairs if self.pairs else None

    @property
    def recall_b(self) -> float | None:
        return (self.both + self.only_b) / self.pairs if self.pairs else None


def mcnemar(
    pairs: Sequence[tuple[bool, bool]], clusters: Sequence[Hashable] | None = None
) -> McNemar:
    """McNemar's test on (entailed in arm A, entailed in arm B) per constraint, adjusted for
    the conversation each constraint belongs to (`clusters`, one label per pair; None: every
    pair its own conversation, the classic test)."""
    a, b, labels = _paired_arrays(pairs, clusters)
    differences = _per_cluster(a.astype(int) - b.astype(int), labels)
    total, spread = int(differences.sum()), int((differences**2).sum())
    statistic = total**2 / spread if spread else 0.0
    split = int(np.count_nonzero(differences))
    exact = split < EXACT_BELOW
    if not split:
        p_value = 1.0
    elif exact:
        p_value = sign_flip_p(differences)
    else:
        p_value = float(chi2.sf(statistic, 1))
    return McNemar(
        both=int(np.sum(a & b)),
        only_a=int(np.sum(a & ~b)),
        only_b=int(np.sum(~a & b)),
        neither=int(np.sum(~a & ~b)),
        clusters=len(set(labels)),
        statistic=float(statistic),
        p_value=min(p_value, 1.0),
        exact=exact,
    )


def sign_flip_p(differences: Sequence[int]) -> float:
    """Two-sided p of sum(differences) against the 2^K sums of +-differences, all equally
    likely: the distribution of the sum is built by convolution, one conversation at a time."""
    sizes = np.abs(np.asarray(differences, dtype=int))
    span = int(sizes.sum())
    probability = np.zeros(2 * span + 1)
    probability[span] = 1.0
    for size in sizes[sizes > 0]:
        probability = (np.roll(probability, size) + np.roll(probability, -size)) / 2
    sums = np.arange(-span, span + 1)
    return float(probability[np.abs(sums) >= abs(int(np.sum(differences)))].sum())


@dataclass(frozen=True)
class ArmComparison:
    """The test and the recalls it compares, with cluster bootstrap intervals."""

    test: McNemar
    recall_a: Estimate | None
    recall_b: Estimate | None
    difference: Estimate | None  # recall A - recall B


def compare_arms(
    pairs: Sequence[tuple[bool, bool]],
    clusters: Sequence[Hashable],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> ArmComparison:
    test = mcnemar(pairs, clusters)
    if not test.pairs:
        return ArmComparison(test, None, None, None)
    a, b, labels = _paired_arrays(pairs, clusters)
    # Per conversation: constraints, entailed by A, entailed by B; resampled conversation-wise.
    totals = np.stack(
        [_per_cluster(np.ones(len(a)), labels), _per_cluster(a, labels), _per_cluster(b, labels)],
        axis=1,
    )
    weights = cluster_weights(range(len(totals)), resamples=resamples, seed=seed)
    n, hits_a, hits_b = (weights @ totals).T
    return ArmComparison(
        test=test,
        recall_a=_estimate(test.recall_a, hits_a / n, confidence),
        recall_b=_estimate(test.recall_b, hits_b / n, confidence),
        difference=_estimate(test.recall_a - test.recall_b, (hits_a - hits_b) / n, confidence),
    )


def _paired_arrays(pairs, clusters) -> tuple[np.ndarray, np.ndarray, list]:
    pairs = list(pairs)
    labels = list(range(len(pairs))) if clusters is None else list(clusters)
    if len(labels) != len(pairs):
        raise ValueError("clusters must name one conversation per pair")
    a = np.array([bool(x) for x, _ in pairs], dtype=bool)
    b = np.array([bool(y) for _, y in pairs], dtype=bool)
    return a, b, labels


def _per_cluster(values: np.ndarray, labels: Sequence[Hashable]) -> np.ndarray:
    """Sums of `values` per cluster, clusters in the order they first appear."""
    numbers = {label: number for number, label in enumerate(dict.fromkeys(labels))}
    of_value = np.array([numbers[label] for label in labels], dtype=int)
    return np.bincount(of_value, weights=values, minlength=len(numbers))
