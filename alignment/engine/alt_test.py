"""The alternative annotator test (Calderon, Reichart and Dror, ACL 2025): may the jury take
the place of one clinician on a rubric?

For one rubric (its clinicians are those of the rubric's track):
- Each clinician j is left out in turn. On every conversation that j scored together with at
  least one other clinician, and that has a jury score, two candidates are compared with the
  *other* clinicians of that conversation: the jury (its mean score) and j. A candidate's
  alignment is minus the root-mean-square difference between its score and each other
  clinician's score - the authors' default for numeric scores (their variant, the distance to
  the others' mean, is not used here).
- W_f(i) = 1 when the jury aligns at least as well as j on conversation i, W_h(i) = 1 when j
  aligns at least as well as the jury (a tie counts for both). Their means over j's
  conversations are the advantage probabilities rho_f(j) (jury) and rho_h(j) (clinician).
- Per clinician, a one-sided paired t-test on d(i) = W_f(i) - W_h(i):
  H0: rho_f(j) <= rho_h(j) - epsilon against H1: rho_f(j) > rho_h(j) - epsilon. epsilon is the
  cost-benefit margin (a study setting; 0.2 for costly expert annotators, 0.1 for crowd
  workers). When every d(i) is the same the t statistic is infinite or 0/0: p is 0 if that
  value exceeds -epsilon, else 1.
- Only clinicians with at least MIN_ITEMS such conversations are tested (as the authors'
  implementation does). Their p-values are adjusted by Benjamini-Yekutieli (valid under any
  dependence between clinicians) and H0 is rejected at q = 0.05. Winning rate omega: the share
  of tested clinicians whose H0 is rejected. The verdict is the authors': the jury passes (may
  replace a clinician) when omega >= 0.5, fails below, and is not tested when no clinician
  could be.
- Average advantage probability rho: the mean over tested clinicians of rho_f(j), one figure
  to rank juries by (over every clinician with a conversation, marked provisional, when none
  is tested). rho_f, rho_h and rho carry 95% bootstrap intervals over conversations.

Design: the authors ask for at least three annotators and a few dozen items with overlap. This
project's conditions - at least MIN_CLINICIANS clinicians on the rubric, typically (median)
MIN_CLINICIANS per conversation, and MIN_ITEMS conversations - do not change the verdict: a
design short of them gets a separate warning beside it (`design_warning`, with what would be
needed in `needs`), so a reader sees both the authors' verdict and how far to trust it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from alignment.engine.bootstrap import RESAMPLES, Estimate, estimate, ratio, undefined
from alignment.engine.design import sample_batch
from alignment.engine.items import ItemColumns, rubric_items
from jury.engine.score_gaps import TOLERANCE

DEFAULT_EPSILON = 0.2
FDR_Q = 0.05
PASSING_WINNING_RATE = 0.5
MIN_ITEMS = 30
MIN_CLINICIANS = 3
ALIGNMENT = (
    "alignment: minus the root-mean-square difference between a candidate's score and each "
    "other clinician's score on the conversation"
)
MAY_REPLACE = "The jury may replace a clinician on this rubric"
MAY_NOT_REPLACE = "The jury may not replace a clinician on this rubric"
NOT_TESTED = "Not tested"
DESIGN_CONDITIONS = (
    f"this project's design conditions (at least {MIN_CLINICIANS} clinicians, "
    f"{MIN_CLINICIANS} per conversation, {MIN_ITEMS} conversations)"
)


@dataclass(frozen=True)
class ClinicianTest:
    """One left-out clinician: the advantage probabilities and the test against them."""

    rater: object
    n_items: int  # conversations shared with another clinician and scored by the jury
    jury_advantage: Estimate  # rho_f(j)
    clinician_advantage: Estimate  # rho_h(j)
    p_value: float | None = None  # one-sided paired t-test; None when not tested
    adjusted_p: float | None = None  # Benjamini-Yekutieli over the tested clinicians
    rejected: bool = False  # H0 rejected: the jury is not worse by more than epsilon
    tested: bool = False
    note: str = ""  # why not tested


@dataclass(frozen=True)
class AltTest:
    epsilon: float
    clinicians: list[ClinicianTest] = field(default_factory=list)
    winning_rate: float | None = None  # omega, share of tested clinicians rejected
    n_tested: int = 0
    n_rejected: int = 0
    advantage_probability: Estimate = field(default_factory=lambda: undefined("not computed"))
    provisional: bool = False  # rho rests on clinicians below MIN_ITEMS (none was tested)
    passed: bool = False  # the authors' verdict: omega >= 0.5
    verdict: str = NOT_TESTED
    reason: str = ""  # one sentence behind the verdict
    needs: list[str] = field(default_factory=list)  # what a design too small lacks
    design_warning: str = ""  # the design is short of DESIGN_CONDITIONS ("" when it is not)
    n_items: int = 0  # conversations entering the test
    n_ratings: int = 0
    n_clinicians: int = 0
    clinicians_per_item: float | None = None  # median over the test's conversations
    resamples: int = 0


def alt_test(
    clinicians: pd.DataFrame,
    jury: pd.Series,
    *,
    epsilon: float = DEFAULT_EPSILON,
    resamples: int = RESAMPLES,
    seed: int = 0,
    q: float = FDR_Q,
    min_items: int = MIN_ITEMS,
) -> AltTest:
    """The test for one rubric. clinicians: item, rater, score (1-5); jury: jury mean by item.

    A rubric without two clinicians on a conversation with a jury score comes back with no
    clinician tested and the verdict "Not shown", saying what is missing."""
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must lie between 0 and 1, got {epsilon}")
    data = rubric_items(clinicians, jury)
    wins_jury, wins_clinician, eligible = _wins(data.scores, data.jury)
    in_test = eligible.any(axis=1)
    ratings = np.where(in_test, data.ratings_per_item, 0)
    columns = ItemColumns(len(data.items))
    for j in range(len(data.raters)):
        columns.add(
            f"rater {j}", np.column_stack([eligible[:, j], wins_jury[:, j], wins_clinician[:, j]])
        )
        columns.add(f"ratings {j}", np.where(eligible[:, j], data.ratings_per_item, 0))
    batch = sample_batch(len(data.items), resamples, seed)
    counts, sums = batch.sums(columns)
    tests = [
        _clinician(
            data.raters[j],
            sums,
            counts,
            j,
            wins_jury,
            wins_clinician,
            eligible,
            epsilon=epsilon,
            min_items=min_items,
        )
        for j in range(len(data.raters))
        if eligible[:, j].any()
    ]
    tests = _adjusted(tests, q)
    per_item = eligible.sum(axis=1)[in_test] if in_test.any() else np.zeros(0)
    base = AltTest(
        epsilon=epsilon,
        clinicians=tests,
        n_items=int(in_test.sum()),
        n_ratings=int(ratings.sum()),
        n_clinicians=len(tests),
        clinicians_per_item=float(np.median(per_item)) if len(per_item) else None,
        resamples=resamples,
    )
    return _verdict(base, _advantage(base, sums, data.raters), min_items=min_items)


def _wins(scores: np.ndarray, jury: np.ndarray):
    """(W_f, W_h, eligible), each (items, clinicians): eligible where the clinician and at
    least one other scored the conversation and the jury has a score.

    Both root-mean-square differences of a conversation divide by the same number of other
    clinicians, so comparing their sums of squares compares the alignments."""
    has = ~np.isnan(scores)
    filled = np.where(has, scores, 0.0)
    m = has.sum(axis=1, keepdims=True)
    judged = np.isfinite(jury)[:, None]
    eligible = has & (m >= 2) & judged
    jury_col = np.where(judged, jury[:, None], 0.0)
    jury_squares = (has * (jury_col - filled) ** 2).sum(axis=1, keepdims=True)
    jury_sq = jury_squares - has * (jury_col - filled) ** 2  # the others only
    totals = filled.sum(axis=1, keepdims=True)
    squares = (filled**2).sum(axis=1, keepdims=True)
    own_sq = m * filled**2 - 2 * filled * totals + squares  # sum over others of (s_j - s_k)^2
    wins_jury = eligible & (jury_sq <= own_sq + TOLERANCE)
    wins_clinician = eligible & (own_sq <= jury_sq + TOLERANCE)
    return wins_jury, wins_clinician, eligible


def _clinician(
    rater, sums, counts, j, wins_jury, wins_clinician, eligible, *, epsilon, min_items
) -> ClinicianTest:
    block, n = sums[f"rater {j}"], int(counts[f"rater {j}"][0, 0])
    ratings = int(counts[f"ratings {j}"][0, 0])
    reason = "no conversation shared with another clinician"

    def figure(values: np.ndarray) -> Estimate:
        return estimate(values, n_items=n, n_ratings=ratings, reason=reason)

    jury_advantage = figure(ratio(block[:, 1], block[:, 0]))
    clinician_advantage = figure(ratio(block[:, 2], block[:, 0]))
    own = eligible[:, j]
    differences = wins_jury[own, j].astype(float) - wins_clinician[own, j].astype(float)
    if n < min_items:
        note = f"not tested: {n} conversation{'s' if n != 1 else ''}, {min_items} needed"
        return ClinicianTest(rater, n, jury_advantage, clinician_advantage, note=note)
    return ClinicianTest(
        rater,
        n,
        jury_advantage,
        clinician_advantage,
        p_value=one_sided_p(differences, epsilon),
        tested=True,
    )


def one_sided_p(differences: np.ndarray, epsilon: float) -> float:
    """p of the paired t-test of H0 mean(d) <= -epsilon against H1 mean(d) > -epsilon."""
    n = len(differences)
    mean = float(differences.mean())
    spread = float(differences.std(ddof=1)) if n > 1 else 0.0
    if spread < 1e-12:
        return 0.0 if mean > -epsilon + TOLERANCE else 1.0
    statistic = (mean + epsilon) / (spread / np.sqrt(n))
    return float(scipy_stats.t.sf(statistic, n - 1))


def _adjusted(tests: list[ClinicianTest], q: float) -> list[ClinicianTest]:
    tested = [t for t in tests if t.tested]
    if not tested:
        return tests
    adjusted = scipy_stats.false_discovery_control([t.p_value for t in tested], method="by")
    by_rater = dict(zip([t.rater for t in tested], adjusted, strict=True))
    out = []
    for t in tests:
        if not t.tested:
            out.append(t)
            continue
        p = float(by_rater[t.rater])
        out.append(
            ClinicianTest(
                t.rater,
                t.n_items,
                t.jury_advantage,
                t.clinician_advantage,
                t.p_value,
                p,
                p <= q,
                True,
            )
        )
    return out


def _advantage(base: AltTest, sums: dict, raters: list) -> AltTest:
    """rho: mean of rho_f over the tested clinicians (every clinician with a conversation,
    provisional, when none is tested), in every resample."""
    tested = [t for t in base.clinicians if t.tested]
    chosen = tested or base.clinicians
    if not chosen:
        reason = "no conversation was scored by two clinicians and the jury"
        return _with(base, advantage_probability=undefined(reason, n_ratings=base.n_ratings))
    index = {rater: j for j, rater in enumerate(raters)}
    shares = np.column_stack(
        [
            ratio(sums[f"rater {index[t.rater]}"][:, 1], sums[f"rater {index[t.rater]}"][:, 0])
            for t in chosen
        ]
    )
    defined = np.isfinite(shares)
    values = ratio(np.where(defined, shares, 0.0).sum(axis=1), defined.sum(axis=1))
    figure = estimate(values, n_items=base.n_items, n_ratings=base.n_ratings, reason="")
    return _with(base, advantage_probability=figure, provisional=not tested)


def _verdict(base: AltTest, result: AltTest, *, min_items: int) -> AltTest:
    """The authors' verdict from the winning rate; the project's design conditions beside it
    as a warning, never in place of it."""
    tested = [t for t in result.clinicians if t.tested]
    rejected = sum(t.rejected for t in tested)
    omega = rejected / len(tested) if tested else None
    passed = omega is not None and omega >= PASSING_WINNING_RATE
    if omega is None:
        verdict = NOT_TESTED
        reason = (
            f"No clinician has the {min_items} conversations shared with another that the "
            "test needs, so there is no winning rate."
        )
    else:
        verdict = MAY_REPLACE if passed else MAY_NOT_REPLACE
        sign = ">=" if passed else "<"
        reason = (
            f"The jury did at least as well as a clinician, within a margin of "
            f"{result.epsilon:g}, for {rejected} of {len(tested)} tested clinicians "
            f"(winning rate {omega:.2f} {sign} {PASSING_WINNING_RATE})."
        )
    needs = _needs(result, min_items=min_items)
    warning = f"The design is short of {DESIGN_CONDITIONS}" if needs else ""
    return _with(
        result,
        winning_rate=omega,
        n_tested=len(tested),
        n_rejected=rejected,
        passed=passed,
        verdict=verdict,
        reason=reason,
        needs=needs,
        design_warning=warning,
    )


def _needs(result: AltTest, *, min_items: int) -> list[str]:
    """What a design too small for the verdict lacks, in words (empty when it is enough)."""
    needs = []
    if result.n_clinicians < MIN_CLINICIANS:
        more = MIN_CLINICIANS - result.n_clinicians
        needs.append(
            f"at least {MIN_CLINICIANS} clinicians scoring this rubric with overlap "
            f"(it has {result.n_clinicians}): {more} more"
        )
    typical = result.clinicians_per_item
    if typical is not None and typical < MIN_CLINICIANS:
        needs.append(
            f"{MIN_CLINICIANS} clinicians on each conversation (now a median of "
            f"{typical:g}): raise the study's overlap to {MIN_CLINICIANS}"
        )
    if result.n_items < min_items:
        needs.append(
            f"at least {min_items} conversations scored by two or more clinicians and "
            f"the jury (it has {result.n_items}): {min_items - result.n_items} more"
        )
    tested = sum(t.tested for t in result.clinicians)
    if result.n_clinicians >= MIN_CLINICIANS and tested < MIN_CLINICIANS:
        short = [t.n_items for t in result.clinicians if not t.tested]
        needs.append(
            f"at least {MIN_CLINICIANS} clinicians with {min_items} conversations "
            f"each shared with another clinician, to be tested ({tested} have; the "
            f"others have as few as {min(short)})"
        )
    return needs


def _with(result: AltTest, **changes) -> AltTest:
    return replace(result, **changes)
