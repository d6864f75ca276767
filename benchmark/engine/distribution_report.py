"""Configured, expected and realised shares of a set of seeds (one row per attribute value).

Shares are fractions of all seeds: a task subcategory's target is its category's probability
times its own, and the derived gender identity's target follows from the sex and gender
weights. The expected share is what the sampler aims at once the eligibility rules and the
infeasible share are applied; its distance from the target is the eligibility effect (zero
wherever the fit meets the configured shares). The `eligibility` rows count the seeds that
break a rule on purpose. Values that occur in the seeds but not in the distribution get a
target of zero, so seeds from an edited file never disappear from the table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.engine.distribution import SEED_ATTRIBUTES, Distribution
from benchmark.engine.eligibility import eligibility_label
from common.csv_export import frame_csv

REPORT_ATTRIBUTES = (*SEED_ATTRIBUTES, "eligibility")
COLUMNS = [
    "attribute",
    "value",
    "target_share",
    "expected_share",
    "eligibility_effect",
    "realised_share",
    "count",
    "difference",
]


def realised_shares(seeds: list[dict[str, Any]], distribution: Distribution) -> pd.DataFrame:
    counts = {
        attribute: Counter(seed[attribute] for seed in seeds) for attribute in SEED_ATTRIBUTES
    }
    counts["eligibility"] = Counter(_eligibility(seed) for seed in seeds)
    rows = [
        (attribute, value, target, expected, counts[attribute].pop(value, 0))
        for attribute, value, target, expected in _planned_shares(distribution)
    ]
    rows += [
        (attribute, value, 0.0, 0.0, count)
        for attribute in REPORT_ATTRIBUTES
        for value, count in counts[attribute].items()
    ]
    frame = pd.DataFrame(
        rows, columns=["attribute", "value", "target_share", "expected_share", "count"]
    )
    frame["eligibility_effect"] = frame["expected_share"] - frame["target_share"]
    frame["realised_share"] = frame["count"] / len(seeds) if seeds else 0.0
    frame["difference"] = frame["realised_share"] - frame["target_share"]
    return frame[COLUMNS]


def _planned_shares(distribution: Distribution) -> list[tuple[str, str, float, float]]:
    """(attribute, value, configured share, expected share) for every reported value."""
    expected = distribution.expected_shares()
    rows = [
        (attribute, value, target, share)
        for (attribute, value, target), (_, _, share) in zip(
            distribution.target_shares(), expected, strict=True
        )
    ]
    # The infeasible share is configured as a whole; how it splits between rules is planned.
    rows += [
        ("eligibility", label, share, share)
        for label, share in distribution.plan.shares("eligibility").items()
    ]
    return rows


def _eligibility(seed: dict[str, Any]) -> str:
    broken = seed.get("broken_rule")  # absent from seeds sampled before eligibility existed
    return eligibility_label(broken["rule"] if broken else None)


def report_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str:
    """The table as CSV text (through csv_export); also written to `path` when given."""
    text = frame_csv(frame, float_format="%.6f")
    if path is not None:
        Path(path).write_text(text, encoding="utf-8", newline="")  # keep the CRLF rows
    return text
