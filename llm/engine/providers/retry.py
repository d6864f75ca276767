"""Retry policy: exponential backoff with full jitter, honouring the server's Retry-After."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from llm.engine.chat import ProviderError

logger = logging.getLogger("llm")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    # A server may ask for a very long pause (a daily quota); waiting longer than this
    # would stall a worker for nothing, so the wait is capped and the call retried.
    max_retry_after: float = 300.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (0 for the first retry)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        # Full jitter spreads many workers' retries out instead of retrying in lockstep.
        return self.rng.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


def call_with_retries(
    call: Callable[[], T], policy: RetryPolicy, *, label: str
) -> tuple[T, dict[str, int]]:
    """Run `call`, retrying only errors that might succeed later; re-raise the last one.

    Returns the result and the retries it took by kind of fault; the error finally raised
    carries them as `error.retries`, so a call that failed still counts what it cost."""
    attempt = 0
    retries: Counter[str] = Counter()
    while True:
        try:
            return call(), dict(retries)
        except ProviderError as error:
            if not error.retryable or attempt >= policy.max_retries:
                error.retries = dict(retries)
                raise
            retries[error.kind] += 1
            wait = policy.delay(attempt, error.retry_after)
            logger.warning(
                "%s: %s error (HTTP %s), retry %d of %d in %.2f s",
                label,
                error.kind,
                error.status,
                attempt + 1,
                policy.max_retries,
                wait,
            )
            policy.sleep(wait)
            attempt += 1
