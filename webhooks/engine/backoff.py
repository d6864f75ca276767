"""When a failed delivery is tried again: the pause doubles after every failed attempt,
from `base` seconds, up to `cap` (a receiver down for an hour is not asked every second, one
back in a minute is not left waiting a day)."""

from __future__ import annotations


def retry_delay(failed_attempts: int, *, base: float, cap: float) -> float:
    """Seconds to wait after the `failed_attempts`-th failure (1 for the first)."""
    if failed_attempts < 1:
        raise ValueError(f"a retry follows at least one failed attempt, not {failed_attempts}")
    if base <= 0:
        raise ValueError(f"the first pause must be positive, not {base}")
    return min(base * 2 ** (failed_attempts - 1), max(cap, base))
