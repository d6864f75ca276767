"""The review's report: fidelity rates overall, per personality and per task type, findings by
error kind, and the flagged conversations; plus the per-conversation verdicts other reports
read (the model report with and without flagged conversations, the study report's comparison
with clinicians' realism scores)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchmark.models import Run
from benchmark.services.replays import run_replay
from fidelity.engine import stats
from fidelity.engine.kinds import default_kinds, kind_labels
from fidelity.models import ConversationReview, FidelityReview, ReviewStatus
from jobs.models import JobStatus

GROUPINGS = (("personality", "Personality"), ("task_category", "Task type"))


def verdicts(review: FidelityReview) -> pd.DataFrame:
    """One row per conversation the review finished: conversation (key), public_id, case,
    personality, task_category, agent, flagged, findings (count)."""
    rows = (
        review.conversation_reviews.filter(status=ReviewStatus.DONE)
        .order_by("conversation_id")
        .values_list(
            "conversation_id",
            "conversation__public_id",
            "conversation__entry_id",
            "conversation__entry__personality",
            "conversation__entry__task_category",
            "conversation__run_agent__label",
            "flagged",
            "findings",
        )
    )
    columns = ["conversation", "public_id", "case", "personality", "task_category", "agent"]
    frame = pd.DataFrame(
        [(*row[:7], len(row[7])) for row in rows], columns=[*columns, "flagged", "findings"]
    )
    return frame.astype({"flagged": bool}) if len(frame) else frame


def latest_finished_review(run: Run) -> FidelityReview | None:
    """The run's newest finished review: the one other reports read."""
    reviews = run.fidelity_reviews.filter(status=JobStatus.FINISHED)
    return reviews.order_by("-finished_at", "-pk").first()


def flagged_conversation_ids(review: FidelityReview) -> set[int]:
    return set(review.conversation_reviews.flagged().values_list("conversation_id", flat=True))


@dataclass(frozen=True)
class RateRow:
    group: str
    n: int
    cases: int
    faithful: int
    rate: float
    low: float
    high: float


def _rate_rows(frame: pd.DataFrame, by: str | None) -> list[RateRow]:
    if not len(frame):
        return []
    table = stats.fidelity_rates(frame, by)
    return [RateRow(str(group), **row) for group, row in table.to_dict("index").items()]


def review_report(review: FidelityReview) -> dict:
    """Everything the review's report page shows. Rates are undefined (absent) for a group
    with no finished review; failed reviews are counted apart and never as faithful."""
    frame = verdicts(review)
    labels = kind_labels()
    findings = [
        {"conversation": unit.conversation_id, **finding}
        for unit in review.conversation_reviews.flagged().only("conversation_id", "findings")
        for finding in unit.findings
    ]
    counts = stats.kind_counts(
        pd.DataFrame(findings, columns=["conversation", "kind"]), [k.id for k in default_kinds()]
    )
    return {
        "overall": next(iter(_rate_rows(frame, None)), None),
        "groupings": [
            {"label": label, "rows": _rate_rows(frame, column)} for column, label in GROUPINGS
        ],
        "kinds": [
            {"id": kind, "label": labels.get(kind, kind), **row}
            for kind, row in counts.to_dict("index").items()
        ],
        "flagged": flagged_rows(review),
        "failed": review.conversation_reviews.filter(status=ReviewStatus.FAILED).count(),
    }


def flagged_rows(review: FidelityReview) -> list[dict]:
    labels = kind_labels()
    units = (
        review.conversation_reviews.flagged()
        .select_related("conversation__entry", "conversation__run_agent")
        .order_by("conversation__entry__index", "conversation_id")
    )
    return [
        {
            "conversation": unit.conversation,
            "findings": [
                {**finding, "label": labels.get(finding["kind"], finding["kind"])}
                for finding in unit.findings
            ],
        }
        for unit in units
    ]


def flagged_replay(review: FidelityReview, *, user=None) -> Run:
    """A new run replaying the review's flagged conversations (same case, agent, repetition,
    seed and clock); start it with job_start once committed. Raises RunError with none."""
    units = review.conversation_reviews.flagged().select_related("conversation")
    return run_replay(
        review.run,
        conversations=[unit.conversation for unit in units],
        name=f"{review.run.name}: flagged by fidelity review {review.pk}, replayed",
        user=user,
        reason=f"fidelity review {review.pk}",
    )


def conversation_verdicts(conversations) -> dict[int, bool]:
    """Per conversation (ids or a subquery of them), whether its newest finished review flagged
    it (none: absent)."""
    units = ConversationReview.objects.filter(
        conversation_id__in=conversations,
        status=ReviewStatus.DONE,
        review__status=JobStatus.FINISHED,
    ).order_by("conversation_id", "-review__finished_at", "-review_id")
    verdict: dict[int, bool] = {}
    for conversation_id, flagged in units.values_list("conversation_id", "flagged"):
        verdict.setdefault(conversation_id, bool(flagged))
    return verdict
