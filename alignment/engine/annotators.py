"""Each clinician's quality and its drift: agreement with the other clinicians and with the
jury, per period (a week, a round), and a flag when their bias moves between rounds.

For every rating of a clinician (one conversation, one rubric):
- against the other clinicians (leave one out): the mean of the *other* clinicians' scores on
  the same conversation and rubric, where at least one other scored it; agreement = share of
  ratings within 1 point of it, bias = mean (score - others' mean);
- against the jury: agreement = share of ratings within 1 point of the jury mean, bias = mean
  (score - jury mean).
Figures carry 95% bootstrap intervals over conversations (all clinicians and periods in one
matrix product) and their n: conversations, and the ratings compared.

Drift: over rounds in order, a clinician is flagged when either bias moves by more than the
study's setting (`drift_flag_points`) from one round to the next in which it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from alignment.engine.bootstrap import RESAMPLES, Estimate, estimate, ratio
from alignment.engine.design import sample_batch
from alignment.engine.frames import ITEM, JURY, RATER, RUBRIC, SCORE, check_ratings
from alignment.engine.items import ItemColumns
from jury.engine.score_gaps import is_adjacent

PERIOD = "period"
OVERALL = "all"
MEASURES = ("peer_n", "peer_hits", "peer_diff", "jury_n", "jury_hits", "jury_diff")


@dataclass(frozen=True)
class AnnotatorPeriod:
    rater: object
    period: str
    peer_agreement: Estimate  # share within 1 of the other clinicians' mean
    peer_bias: Estimate  # mean (score - others' mean)
    jury_agreement: Estimate  # share within 1 of the jury mean
    jury_bias: Estimate  # mean (score - jury mean)
    ratings: int  # every rating of the clinician in the period


@dataclass(frozen=True)
class DriftFlag:
    rater: object
    measure: str  # "peer_bias" or "jury_bias"
    before: str  # round label
    after: str
    moved: float  # after - before, in points


def annotator_quality(
    clinicians: pd.DataFrame,
    jury_long: pd.DataFrame,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> list[AnnotatorPeriod]:
    """clinicians: item, rubric, rater, score and a PERIOD label per rating (OVERALL for
    one figure per clinician); jury_long: item, rubric, jury. One entry per (rater, period),
    in rater then period order."""
    check_ratings(clinicians, who="clinician", key=RATER, extra=(RUBRIC,))
    if clinicians.empty:
        return []
    frame = _compared(clinicians, jury_long)
    items = np.sort(frame[ITEM].unique())
    groups = list(frame.groupby([RATER, PERIOD], sort=True).groups)
    per_item = frame.groupby([ITEM, RATER, PERIOD])[list(MEASURES)].sum()
    columns = ItemColumns(len(items))
    for rater, period in groups:
        block = per_item.xs((rater, period), level=(RATER, PERIOD)).reindex(items, fill_value=0)
        columns.add(f"{rater}|{period}", block.to_numpy(dtype=float))
    batch = sample_batch(len(items), resamples, seed)
    counts, sums = batch.sums(columns)
    ratings = frame.groupby([RATER, PERIOD]).size()
    peer_items = frame[frame["peer_n"] > 0].groupby([RATER, PERIOD])[ITEM].nunique()
    jury_items = frame[frame["jury_n"] > 0].groupby([RATER, PERIOD])[ITEM].nunique()
    return [
        _figures(
            rater,
            period,
            sums[f"{rater}|{period}"],
            counts[f"{rater}|{period}"],
            int(peer_items.get((rater, period), 0)),
            int(jury_items.get((rater, period), 0)),
            int(ratings[(rater, period)]),
        )
        for rater, period in groups
    ]


def _compared(clinicians: pd.DataFrame, jury_long: pd.DataFrame) -> pd.DataFrame:
    """Per rating: whether it has peers / a jury, whether it is within 1 of each, the diffs."""
    frame = clinicians[[ITEM, RUBRIC, RATER, SCORE, PERIOD]].copy()
    frame[SCORE] = frame[SCORE].astype(float)
    key = [ITEM, RUBRIC]
    totals = frame.groupby(key)[SCORE].transform("sum")
    counts = frame.groupby(key)[SCORE].transform("size")
    others = ratio(totals - frame[SCORE], counts - 1)
    peer = np.isfinite(others)
    peer_gap = np.where(peer, frame[SCORE] - np.nan_to_num(others), 0.0)
    jury = frame.merge(jury_long[[ITEM, RUBRIC, JURY]], on=key, how="left")[JURY].to_numpy(float)
    judged = np.isfinite(jury)
    jury_gap = np.where(judged, frame[SCORE].to_numpy() - np.nan_to_num(jury), 0.0)
    return frame.assign(
        peer_n=peer.astype(float),
        peer_hits=(peer & is_adjacent(peer_gap)).astype(float),
        peer_diff=peer_gap,
        jury_n=judged.astype(float),
        jury_hits=(judged & is_adjacent(jury_gap)).astype(float),
        jury_diff=jury_gap,
    )


def _figures(rater, period, block, count, peer_items, jury_items, ratings) -> AnnotatorPeriod:
    peer_n, jury_n = int(count[0, 0]), int(count[0, 3])
    no_peer = "no other clinician scored the same conversations and rubrics"
    no_jury = "no jury score on these conversations"

    def peer(values):
        return estimate(values, n_items=peer_items, n_ratings=peer_n, reason=no_peer)

    def versus_jury(values):
        return estimate(values, n_items=jury_items, n_ratings=jury_n, reason=no_jury)

    return AnnotatorPeriod(
        rater=rater,
        period=str(period),
        peer_agreement=peer(ratio(block[:, 1], block[:, 0])),
        peer_bias=peer(ratio(block[:, 2], block[:, 0])),
        jury_agreement=versus_jury(ratio(block[:, 4], block[:, 3])),
        jury_bias=versus_jury(ratio(block[:, 5], block[:, 3])),
        ratings=ratings,
    )


def drift_flags(
    rounds: list[tuple[str, dict]], *, threshold: float, measures=("peer_bias", "jury_bias")
) -> list[DriftFlag]:
    """rounds: (label, {rater: AnnotatorPeriod}) in order. A flag for every clinician and
    bias that moved by more than `threshold` points between two consecutive rounds where it
    is defined (a round the clinician skipped is passed over)."""
    flags = []
    raters = sorted({rater for _, figures in rounds for rater in figures}, key=str)
    for rater in raters:
        for measure in measures:
            previous = None
            for label, figures in rounds:
                figure = figures.get(rater)
                value = None if figure is None else getattr(figure, measure).value
                if value is None:
                    continue
                if previous is not None and abs(value - previous[1]) > threshold + 1e-9:
                    flags.append(DriftFlag(rater, measure, previous[0], label, value - previous[1]))
                previous = (label, value)
    return flags
