"""Model figures with and without the conversations a fidelity review flagged.

A conversation in which the simulated patient did not play its part (it invented a fact, gave
its story away, spoke as the assistant...) tests the agent on something the case was not
written to test. Setting the run's model figures beside the same figures over the unflagged
conversations shows whether such lapses move the standing. Both columns use the model table's
own statistics (jury.engine.stats.model_table: cluster-robust t interval over cases)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fidelity.models import FidelityReview
from fidelity.services.reports import flagged_conversation_ids, latest_finished_review
from jury.engine import stats
from jury.services.reports import Report, aggregate_interval_text


@dataclass(frozen=True)
class Figure:
    """One model's aggregate over a set of conversations (mean is None with no conversation)."""

    n: int
    mean: float | None
    interval_text: str


@dataclass(frozen=True)
class SplitRow:
    model: str
    scripted: bool
    flagged: int
    all: Figure
    unflagged: Figure


@dataclass(frozen=True)
class FidelitySplit:
    review: FidelityReview
    rows: list[SplitRow]


def fidelity_split(report: Report) -> FidelitySplit | None:
    """Per model, the aggregate over all complete conversations and over those the run's
    newest finished fidelity review did not flag; None when the run has no finished review.
    A conversation the review did not reach (failed) stays in both: nothing was found."""
    review = latest_finished_review(report.job.run)
    if review is None:
        return None
    flagged = flagged_conversation_ids(review)
    conversations = report.conversations
    kept = ~conversations["conversation_id"].isin(flagged)
    whole = _figures(report, conversations)
    unflagged = _figures(report, conversations[kept])
    flagged_counts = conversations[~kept].groupby("model").size()
    rows = [
        SplitRow(
            model=model,
            scripted=model in report.scripted,
            flagged=int(flagged_counts.get(model, 0)),
            all=figure,
            unflagged=unflagged.get(model, Figure(0, None, "")),
        )
        for model, figure in whole.items()
    ]
    return FidelitySplit(review=review, rows=rows)


def _figures(report: Report, conversations: pd.DataFrame) -> dict[str, Figure]:
    """Model -> its aggregate figure over `conversations`, best first."""
    if conversations.empty:
        return {}
    ids = conversations["conversation_id"]
    scores = report.rubric_scores[report.rubric_scores["conversation_id"].isin(ids)]
    table = stats.model_table(scores, conversations, rubric_order=list(report.rubrics))
    return {
        model: Figure(int(row["n"]), float(row["aggregate_mean"]), aggregate_interval_text(row))
        for model, row in table.iterrows()  # one row per model, a handful at most
    }
