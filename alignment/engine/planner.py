"""Precision planner: how many more annotated conversations until the adjacent-agreement
interval is narrow enough to stop.

Adjacent agreement is a share of conversations, so its interval width shrinks like
1 / sqrt(n). The planner keeps the current share p and asks for the smallest n whose Wilson
score interval (Wilson 1927) is at most `target_width` wide. Wilson rather than the bootstrap
percentile interval of the page: with every conversation in agreement (p = 1) a resampling or
normal interval has zero width and would say "stop now" after three conversations, whereas
Wilson's stays honestly wide at small n. For a share away from 0 and 1 the two agree closely.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy import stats as scipy_stats

# Beyond this many conversations the answer is "not reachable in practice".
MAX_ITEMS = 10_000_000


def wilson_width(share: float, n: int, *, confidence: float = 0.95) -> float:
    """Width of the Wilson score interval for a share observed on n items."""
    z = scipy_stats.norm.ppf(0.5 + confidence / 2)
    spread = math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return 2 * z * spread / (1 + z * z / n)


def items_needed(
    hits: Sequence[bool], *, target_width: float, confidence: float = 0.95
) -> int | None:
    """Additional conversations (0 if already narrow enough) so that the adjacent-agreement
    interval is at most target_width wide, assuming the share stays where it is now.

    None when it cannot be estimated: no annotated conversation yet, or the target would need
    more than MAX_ITEMS. A target outside (0, 1) or a confidence outside (0, 1) is an error."""
    if not 0 < target_width < 1:
        raise ValueError(f"target_width must lie between 0 and 1, got {target_width}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie between 0 and 1, got {confidence}")
    n = len(hits)
    if n == 0:
        return None
    share = sum(bool(hit) for hit in hits) / n
    if wilson_width(share, n, confidence=confidence) <= target_width:
        return 0
    if wilson_width(share, MAX_ITEMS, confidence=confidence) > target_width:
        return None
    # The width falls steadily as n grows: bisect for the first n that is narrow enough.
    low, high = n, MAX_ITEMS
    while high - low > 1:
        middle = (low + high) // 2
        if wilson_width(share, middle, confidence=confidence) <= target_width:
            high = middle
        else:
            low = middle
    return high - n
