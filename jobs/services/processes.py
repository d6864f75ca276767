"""Which process holds a piece of work, and whether that process still exists.

A process is named by its host, pid and start: the start tells a pid the system has reused
apart from the process that held the work. Where the kernel says when a process started in
clock ticks since boot (Linux's /proc), those ticks are compared exactly; the start time in
wall-clock seconds is kept for reading and as the fallback elsewhere, since it is derived from
the wall clock and moves when the clock is stepped (NTP on a VM), which would make a live
process look gone. Whether a process exists can only be asked
on its own host; work held on another host keeps its lease (jobs.services.leases), since
a missing heartbeat there may mean a slow network or a database restart, not a dead process.
Host names are assumed to name one machine (as Celery's node names do).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil

# The start time read back from the system is rounded to clock ticks; a reused pid starts
# later by far more than this. Used only where start ticks are not available.
START_TIME_TOLERANCE_SECONDS = 1.0
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    started_at: datetime
    start_ticks: int | None = None  # clock ticks from boot to the start, where known

    def describe(self) -> str:
        where = "this host" if self.host == this_host() else self.host
        return f"pid {self.pid} on {where}"


_this: dict[int, ProcessIdentity] = {}  # keyed by pid: a forked child is another process


def this_host() -> str:
    return socket.gethostname()


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    if pid not in _this:
        _this[pid] = ProcessIdentity(this_host(), pid, _started_at(pid), start_ticks(pid))
    return _this[pid]


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (field 22 of /proc/<pid>/stat), or
    None where the system does not say. Unlike a wall-clock time it never moves."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
    fields = stat.rpartition(")")[2].split()
    try:
        return int(fields[19])  # field 22 overall: fields 3.. follow the name
    except (IndexError, ValueError):
        return None


def _started_at(pid: int) -> datetime:
    return datetime.fromtimestamp(psutil.Process(pid).create_time(), tz=UTC)


def process_gone(identity: ProcessIdentity) -> bool:
    """True only when `identity` is a process of this host that no longer runs; a process
    of another host is never taken for gone."""
    if identity.host != this_host():
        return False
    try:
        process = psutil.Process(identity.pid)
        started = datetime.fromtimestamp(process.create_time(), tz=UTC)
        # A killed process its parent has not reaped yet still has a pid, but runs nothing.
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
    except psutil.NoSuchProcess:  # ZombieProcess included
        return True
    except psutil.Error:  # exists, but not ours to inspect: assume it is the holder
        return False
    if identity.start_ticks is not None:
        ticks = start_ticks(identity.pid)
        if ticks is not None:
            return ticks != identity.start_ticks
    return abs((started - identity.started_at).total_seconds()) > START_TIME_TOLERANCE_SECONDS


def holder_fields(identity: ProcessIdentity | None) -> dict:
    """The `holder_*` columns of a row held by `identity` (None: held by no process, e.g.
    waiting in the task queue)."""
    if identity is None:
        return {
            "holder_host": "",
            "holder_pid": None,
            "holder_started_at": None,
            "holder_start_ticks": None,
        }
    return {
        "holder_host": identity.host,
        "holder_pid": identity.pid,
        "holder_started_at": identity.started_at,
        "holder_start_ticks": identity.start_ticks,
    }


def holder_of(row) -> ProcessIdentity | None:
    """The process a row's `holder_*` columns name, if any."""
    if not row.holder_host or row.holder_pid is None or row.holder_started_at is None:
        return None
    return ProcessIdentity(
        row.holder_host, row.holder_pid, row.holder_started_at, row.holder_start_ticks
    )
