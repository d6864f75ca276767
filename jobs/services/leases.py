"""Leased work: rows that workers execute, sent a window at a time, and never lost.

Judge scores and benchmark entries carry `claimed_until` (the lease) and `lease_token`.
`lease_dispatch` stamps up to `window` free pending rows with a fresh token and a lease and
sends (id, token) once the transaction commits. `lease_claim` lets only the message carrying
the row's current token take it (or, for work run in the caller's own process, anyone while
nobody holds the row) and re-stamps the row with the worker's own token; `Heartbeat` extends
the lease while a long model call runs. A worker that dies holds its rows only until their
lease runs out: the job's watch (jobs.services.watch) then dispatches them again with a
new token, so the lost message is refused should it ever arrive.

Sending a window rather than everything at once keeps the queue short: a lost task is found
within one lease period instead of after thousands of others drain.

Conversations use their status (queued / running) and heartbeat for the same purpose; the same
watch re-dispatches them.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from jobs.services.queue import queue_send

logger = logging.getLogger(__name__)

LeasedTask = tuple[int, str]  # (row id, lease token)
# What a query raises when the database connection dropped (a restart, a network cut).
CONNECTION_LOST = (OperationalError, InterfaceError)


def lease() -> timedelta:
    """Work whose worker has not reported for this long is presumed lost and sent again."""
    return timedelta(seconds=settings.CONVERSATION_LEASE_SECONDS)


def new_token() -> str:
    return secrets.token_hex(16)


def lease_dispatch(
    pending: QuerySet,
    *,
    window: int,
    send: Callable[[list[LeasedTask]], None],
    stop: Callable[[], bool] | None = None,
) -> list[LeasedTask]:
    """Send free rows of `pending` until `window` of them are held; returns what was sent.
    `stop` is asked when there is work to send (the job's cost limit check): True sends none.

    The caller serialises dispatches of one job (a row lock on the job), so together they never
    exceed the window."""
    now = timezone.now()
    room = window - pending.filter(claimed_until__gt=now).count()
    if room <= 0:
        return []
    ids = _free_rows(pending, now=now, room=room)
    if not ids or (stop is not None and stop()):
        return []
    token = new_token()
    pending.filter(pk__in=ids).update(claimed_until=now + lease(), lease_token=token)
    messages = [(pk, token) for pk in ids]
    # Rows whose messages could not be sent are unclaimed at once, so the next dispatch sends
    # them again instead of waiting a lease for messages that never left.
    unsent = pending.model.objects.filter(pk__in=ids, lease_token=token)
    what = f"{len(ids)} {pending.model._meta.verbose_name_plural}"
    transaction.on_commit(
        lambda: queue_send(lambda: send(messages), what=what, undo=lambda: _unclaim(unsent))
    )
    return messages


def lease_dispatch_groups(
    pending: QuerySet,
    *,
    window: int,
    group_by: str,
    largest: int,
    send: Callable[[list[LeasedTask]], None],
    stop: Callable[[], bool] | None = None,
) -> list[LeasedTask]:
    """`lease_dispatch` for work whose rows go out in groups, one message per group: the free
    rows of one `group_by` value (a conversation's judge calls) share a token, and the message
    names the group's first row and that token; a worker runs a group's rows one after the
    other. `window` counts groups in flight (one call each), so it keeps its meaning of calls in
    flight. Groups hold up to `largest` rows, fewer when there are too few free rows to fill
    the window (a small job, the end of a big one): then more, smaller groups run side by side.

    One message per group instead of per row: the group's claim, read, heartbeat and the
    dispatch after it happen once for up to `largest` rows. The caller serialises dispatches
    of one job (a row lock on the job)."""
    now = timezone.now()
    held = pending.filter(claimed_until__gt=now).values("lease_token").distinct().count()
    room = window - held
    if room <= 0:
        return []
    rows = _free_rows_of_groups(pending, now=now, wanted=room * largest, group_by=group_by)
    if not rows or (stop is not None and stop()):
        return []
    messages = []
    for group in _groups(rows, room=room, largest=largest):
        token = new_token()
        pending.filter(pk__in=group).update(claimed_until=now + lease(), lease_token=token)
        messages.append((group[0], token))
    tokens = [token for _, token in messages]
    unsent = pending.model.objects.filter(lease_token__in=tokens)
    what = f"{len(messages)} groups of {pending.model._meta.verbose_name_plural}"
    transaction.on_commit(
        lambda: queue_send(lambda: send(messages), what=what, undo=lambda: _unclaim(unsent))
    )
    return messages


def _free_rows_of_groups(pending: QuerySet, *, now, wanted: int, group_by: str) -> list:
    """(pk, group) of up to `wanted` free rows, lost ones first (as `_free_rows`)."""
    expired = pending.filter(claimed_until__lte=now).order_by("claimed_until")
    rows = list(expired.values_list("pk", group_by)[:wanted])
    if len(rows) < wanted:
        never_sent = pending.filter(claimed_until=None).order_by("claimed_until")
        rows += never_sent.values_list("pk", group_by)[: wanted - len(rows)]
    return rows


def _groups(rows: list, *, room: int, largest: int) -> list[list[int]]:
    """At most `room` groups of the rows, each of one group value and at most `size` rows,
    where `size` is the largest that still fills `room` groups with the rows found (at most
    `largest`): too few rows for the window are sent one by one, side by side."""
    size = max(1, min(largest, len(rows) // room))
    by_value: dict = {}
    for pk, value in rows:
        by_value.setdefault(value, []).append(pk)
    groups = [
        sorted(pks)[start : start + size]
        for pks in by_value.values()
        for start in range(0, len(pks), size)
    ]
    return groups[:room]


def _free_rows(pending: QuerySet, *, now, room: int) -> list[int]:
    """Up to `room` pending rows nobody holds: first those whose lease ran out (lost work,
    oldest first), then those never sent, in the order they were created.

    Two queries, each a range of the (job, status, claimed_until) index every leased table
    has, read in index order and stopped after `room` rows: neither reads a finished row nor
    one in flight, so a dispatch costs the same at 90% done as at the start. (Ordering free
    rows by primary key instead made the database walk the key past every finished row.)"""
    expired = pending.filter(claimed_until__lte=now).order_by("claimed_until")
    ids = list(expired.values_list("pk", flat=True)[:room])
    if len(ids) < room:
        never_sent = pending.filter(claimed_until=None).order_by("claimed_until")
        ids += never_sent.values_list("pk", flat=True)[: room - len(ids)]
    return sorted(ids)


def any_pending(pending: QuerySet, *, by: str = "claimed_until") -> bool:
    """Whether `pending` (one job's pending rows) holds a row, asked of the index.

    `exists()` drops any ordering, and PostgreSQL answers a bare "LIMIT 1" by scanning the
    table from its start expecting a match soon, which at 90% done reads every finished row
    of the job first. Ordered by the index column after (job, status) - `claimed_until` on
    leased rows, the key on conversations - it reads one index entry."""
    return pending.order_by(by).values_list("pk", flat=True).first() is not None


def _unclaim(rows: QuerySet) -> None:
    rows.update(claimed_until=None, lease_token="")


def lease_claim(row: QuerySet, token: str | None) -> str | None:
    """Take the (pending) row for this worker; returns the worker's own token, or None when the
    message is stale or a duplicate, or another worker holds the row.

    `token` is the one the message was sent with; None means the caller runs the work in its
    own process (tests, --inline), which may take any row nobody holds."""
    now = timezone.now()
    takeable = row.filter(lease_token=token) if token else row.exclude(claimed_until__gt=now)
    mine = new_token()
    return mine if takeable.update(claimed_until=now + lease(), lease_token=mine) else None


def lease_release_fields() -> dict[str, Any]:
    """Fields that end a lease when the outcome is stored."""
    return {"claimed_until": None, "lease_token": ""}


class Heartbeat:
    """Call `refresh` every third of a lease while the work runs (or every `interval`).

    A single model call can outlast the lease (retries, Retry-After, rate-limit waits), so the
    lease cannot depend on the work making progress. Writes are a few per lease period: each
    takes SQLite's database-wide lock. Every heartbeat of a process beats from one shared
    thread (`_Beats`), started with the first: most work (a judge call) ends long before its
    first beat, and a thread started and joined per task cost more than the task's queries.
    `thread` names the shared thread: periodic work that waits on something slower than the
    database (a mail server) beats in a thread of its own name, so it never delays a lease.
    """

    def __init__(
        self,
        refresh: Callable[[], Any],
        *,
        label: str,
        interval: float | None = None,
        thread: str = "heartbeats",
    ):
        self.refresh = refresh
        self.label = label
        self.interval = interval or min(60.0, settings.CONVERSATION_LEASE_SECONDS / 3)
        self.thread = thread

    def start(self) -> Heartbeat:
        _beats(self.thread).add(self)
        return self

    def stop(self) -> None:
        """No beat of this heartbeat runs once this returns (one under way is waited for)."""
        _beats(self.thread).remove(self)

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def beat(self) -> None:
        try:
            connection_checked()
            self.refresh()
        except DatabaseError:  # a missed beat must not end the work
            logger.warning("heartbeat for %s not written", self.label)


class _Beats:
    """The process's heartbeats and the one thread that beats them when due, each every
    `interval` from its start. The thread keeps its database connection between beats."""

    def __init__(self, name: str):
        self._due: dict[Heartbeat, float] = {}
        self._beating: Heartbeat | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def add(self, heartbeat: Heartbeat) -> None:
        with self._changed:
            self._due[heartbeat] = time.monotonic() + heartbeat.interval
            self._changed.notify_all()

    def remove(self, heartbeat: Heartbeat) -> None:
        with self._changed:
            self._due.pop(heartbeat, None)
            while self._beating is heartbeat:
                self._changed.wait()

    def _run(self) -> None:
        while True:
            heartbeat = self._next_due()
            try:
                heartbeat.beat()
            except Exception:  # one heartbeat's bug must not stop every other's
                logger.exception("heartbeat for %s failed", heartbeat.label)
            finally:
                with self._changed:
                    self._beating = None
                    if heartbeat in self._due:
                        self._due[heartbeat] = time.monotonic() + heartbeat.interval
                    self._changed.notify_all()

    def _next_due(self) -> Heartbeat:
        with self._changed:
            while True:
                now = time.monotonic()
                soonest = min(self._due.items(), key=lambda item: item[1], default=None)
                if soonest is not None and soonest[1] <= now:
                    self._beating = soonest[0]
                    return soonest[0]
                self._changed.wait(None if soonest is None else soonest[1] - now)


_shared_beats: dict[str, _Beats] = {}
_shared_beats_lock = threading.Lock()


def _beats(name: str) -> _Beats:
    with _shared_beats_lock:
        beats = _shared_beats.get(name)
        if beats is None or not beats._thread.is_alive():
            beats = _shared_beats[name] = _Beats(name)
        return beats


# A connection last used this recently is taken as it is (see connection_checked).
UNCHECKED_IDLE_SECONDS = 5.0


def connection_checked(*, idle_seconds: float | None = None) -> None:
    """Replace this thread's database connection if it broke (the database restarted).

    Django checks connections between requests and Celery between tasks; a task that runs for
    minutes (a conversation, a judge call that waits on retries, the heartbeat beside them)
    must check its own before it writes what it did, or a restart in the meantime would cost
    the whole attempt. `idle_seconds`: how long ago the task last used the connection; under
    UNCHECKED_IDLE_SECONDS the check (a round trip to the database) is skipped, and a write
    that still finds the connection gone leaves the row in flight for its lease, as any
    failed write does. A connection inside a transaction is left alone: it belongs to
    whoever opened it."""
    if idle_seconds is not None and idle_seconds < UNCHECKED_IDLE_SECONDS:
        return
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def lease_extender(row: QuerySet, token: str) -> Callable[[], int]:
    """A Heartbeat refresh that extends the lease while `token` still owns the row."""
    return lambda: row.filter(lease_token=token).update(claimed_until=timezone.now() + lease())
