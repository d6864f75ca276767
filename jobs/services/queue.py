"""Whether the task queue answers, and sending work so that an unavailable queue loses nothing.

With REDIS_URL set, Redis can go away while the site runs. Pages must not hang or fail on it:
`queue_available` pings Redis with a short timeout and remembers the answer for a few
seconds, and the pages say the queue is unavailable. Work is always saved in the database
before it is sent, so a message that cannot be sent is not lost: `queue_send` logs the
failure, lets the caller put its rows back as they were (pending, unclaimed), and the job's
watch sends them when a worker reconnects to Redis (see config/celery.py) or on the next
resume. The embedded folder queue lives on this machine's disk and is always available.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger(__name__)

PING_TIMEOUT_SECONDS = 0.5
REMEMBER_SECONDS = 5.0
# What sending raises when the broker is unreachable (kombu wraps the connection errors).
QUEUE_ERRORS = (BrokerError, redis.RedisError)
UNAVAILABLE_MESSAGE = (
    "The task queue (Redis) is unavailable. Pages keep working and everything you launch is "
    "saved; the work starts once the queue is back."
)

_lock = threading.Lock()
_last_checks: dict[str, tuple[float, bool]] = {}  # Redis URL -> (when, available)


def queue_available() -> bool:
    """Whether the broker answers; asked at most every REMEMBER_SECONDS per process."""
    url = settings.REDIS_URL
    if not url:
        return True
    with _lock:
        checked_at, available = _last_checks.get(url, (float("-inf"), True))
    if time.monotonic() - checked_at < REMEMBER_SECONDS:
        return available
    available = _ping(url)
    _remember(available)
    return available


def queue_send(
    send: Callable[[], Any], *, what: str, undo: Callable[[], Any] | None = None
) -> bool:
    """Call `send` (which publishes messages); on a broker failure, log it, call `undo` so the
    work waits in the database, and return False instead of raising."""
    try:
        send()
    except QUEUE_ERRORS as error:
        _remember(False)
        logger.warning("task queue unavailable, %s kept for later: %s", what, error)
        if undo is not None:
            undo()
        return False
    return True


def _ping(url: str) -> bool:
    client = redis.Redis.from_url(
        url, socket_connect_timeout=PING_TIMEOUT_SECONDS, socket_timeout=PING_TIMEOUT_SECONDS
    )
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _remember(available: bool) -> None:
    if settings.REDIS_URL:
        with _lock:
            _last_checks[settings.REDIS_URL] = (time.monotonic(), available)


def held_work_message(what: str) -> str | None:
    """What to tell a person who just launched `what` when the queue could not take it."""
    if queue_available():
        return None
    return (
        f"The task queue is unavailable: {what} is saved and will start by itself once the "
        "queue is back (or press Resume then)."
    )
