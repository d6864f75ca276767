"""The fidelity reviewer set against the clinicians: per realism rubric of a study, do the
conversations the reviewer flagged (the simulated patient failed to play its part) get lower
realism scores from clinicians, and how often do the two verdicts agree?

Read live, not from the cached study report: a review finished after the report was cached
must show at once. Staff pages only: a review names nothing an annotator may not see, but it
is an analysis of the study, not part of the annotation work."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from alignment.services.frames import RubricInfo, conversation_scope
from alignment.services.reports import StudyReport
from fidelity.engine import stats
from fidelity.services.reports import conversation_verdicts


@dataclass(frozen=True)
class FidelityComparison:
    rubric: RubricInfo
    n: int  # conversations with both a review verdict and a clinicians' score
    flagged: int
    gap: dict  # fidelity.engine.stats.realism_gap
    agreement: dict  # fidelity.engine.stats.verdict_agreement
    unrealistic_at_most: float = stats.UNREALISTIC_AT_MOST

    @property
    def figures(self) -> list[stats.Comparison]:
        """The gap, the agreement and kappa, in the order the page shows them."""
        return [self.gap["gap"], self.agreement["agreement"], self.agreement["kappa"]]


def verdict_pairs(item_means: dict[int, float], verdicts: dict[int, bool]) -> pd.DataFrame:
    """One row per conversation with both: conversation, flagged, realism (clinicians' mean)."""
    rows = [(item, verdicts[item], mean) for item, mean in item_means.items() if item in verdicts]
    return pd.DataFrame(rows, columns=["conversation", "flagged", "realism"])


def fidelity_comparisons(report: StudyReport) -> list[FidelityComparison]:
    """Per realism rubric; empty when no conversation of the study has a finished review."""
    items = {item for section in report.realism for item in section.item_means}
    # The study's conversations as a subquery: binding thousands of ids cost more than the read.
    verdicts = conversation_verdicts(conversation_scope(report.study_id, report.filters.model))
    if not items & verdicts.keys():
        return []
    comparisons = []
    for section in report.realism:
        pairs = verdict_pairs(section.item_means, verdicts)
        comparisons.append(
            FidelityComparison(
                rubric=section.rubric,
                n=len(pairs),
                flagged=int(pairs["flagged"].sum()),
                gap=stats.realism_gap(pairs),
                agreement=stats.verdict_agreement(pairs),
            )
        )
    return comparisons
