"""Provider retries as stored (ProviderRetries columns) and as pages show them.

The provider layer counts every fault it asked again after, by kind, on the answer
(`ChatResponse.retries`) or on the error it finally raised (`ProviderError.retries`); the
recording client adds them up per unit of work, and each unit stores its counts in the
`retries_<kind>` columns of ModelCall, Conversation and JudgeScore.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db.models import QuerySet, Sum

from llm.engine.chat import RETRY_KINDS, RETRY_LABELS


def column(kind: str) -> str:
    return f"retries_{kind}"


def retry_fields(retries: Mapping[str, int]) -> dict[str, int]:
    """Column values for counts by kind (kinds outside RETRY_KINDS are never retried)."""
    return {column(kind): retries.get(kind, 0) for kind in RETRY_KINDS}


def retries_added(row, retries: Mapping[str, int]) -> None:
    """Add counts to an (unsaved) row's columns, for rows that sum over attempts."""
    for kind in RETRY_KINDS:
        setattr(row, column(kind), getattr(row, column(kind)) + retries.get(kind, 0))


@dataclass(frozen=True)
class RetrySummary:
    by_kind: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def __str__(self) -> str:
        """ "14 provider retries (9 rate limit, 5 server error)", or "no provider retries"."""
        if not self.total:
            return "no provider retries"
        parts = ", ".join(f"{n} {RETRY_LABELS[kind]}" for kind, n in self.by_kind.items() if n)
        noun = "retry" if self.total == 1 else "retries"
        return f"{self.total} provider {noun} ({parts})"


def retry_summary(rows: QuerySet) -> RetrySummary:
    """Totals over the rows of any ProviderRetries model."""
    sums = rows.aggregate(**{kind: Sum(column(kind)) for kind in RETRY_KINDS})
    return RetrySummary({kind: sums[kind] or 0 for kind in RETRY_KINDS})


def row_retries(row) -> RetrySummary:
    return RetrySummary({kind: getattr(row, column(kind)) for kind in RETRY_KINDS})
