"""Target versus realised shares of a set of seeds (one row per attribute value).

Shares are fractions of all seeds: a task subcategory's target is its category's probability
times its own, and the derived gender identity's target follows from the sex and gender
weights. Values that occur in the seeds but not in the distribution get a target of zero, so
seeds from an edited file never disappear from the table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from benchmark.engine.distribution import SEED_ATTRIBUTES, Distribution

COLUMNS = ["attribute", "value", "target_share", "realised_share", "count", "difference"]


def realised_shares(seeds: list[dict[str, Any]], distribution: Distribution) -> pd.DataFrame:
    counts = {
        attribute: Counter(seed[attribute] for seed in seeds) for attribute in SEED_ATTRIBUTES
    }
    rows = [
        (attribute, value, target, counts[attribute].pop(value, 0))
        for attribute, value, target in distribution.target_shares()
    ]
    rows += [
        (attribute, value, 0.0, count)
        for attribute in SEED_ATTRIBUTES
        for value, count in counts[attribute].items()
    ]
    frame = pd.DataFrame(rows, columns=["attribute", "value", "target_share", "count"])
    frame["realised_share"] = frame["count"] / len(seeds) if seeds else 0.0
    frame["difference"] = frame["realised_share"] - frame["target_share"]
    return frame[COLUMNS]


def to_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str:
    """The table as CSV text; also written to `path` when given."""
    text = frame.to_csv(index=False, float_format="%.6f")
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
