"""Heartbeats extend leases while long work runs, from one thread per process: short work
(most judge calls end before their first beat) starts no thread of its own."""

import threading
import time

import pytest

from jobs.services.leases import Heartbeat

DEADLINE = 30  # seconds; the machine may be busy
# The process has one beats thread, and an earlier test's lease refresh may have left that
# thread a database connection; each beat checks it, which pytest-django refuses in a test
# without database access, and every beat would then fail. So every test here may reach it.
pytestmark = pytest.mark.django_db


class Beats:
    def __init__(self):
        self.count = 0
        self.threads: set[str] = set()

    def __call__(self) -> None:
        self.count += 1
        self.threads.add(threading.current_thread().name)


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE} s"
        time.sleep(0.01)


def test_short_work_starts_no_thread_of_its_own(monkeypatch):
    with Heartbeat(Beats(), label="warm-up"):
        pass  # the process's heartbeat thread may start here, once
    started = []
    original = threading.Thread.start
    monkeypatch.setattr(
        threading.Thread, "start", lambda self: (started.append(self), original(self))
    )

    for n in range(20):
        with Heartbeat(Beats(), label=f"short {n}"):
            pass

    assert started == []


# Each beat checks the beating thread's database connection; the process's one heartbeat thread
# may have opened one for an earlier test, and pytest-django refuses it to a test without `db`.
def test_long_work_is_beaten_until_it_ends_and_never_after():
    first, second = Beats(), Beats()
    with (
        Heartbeat(first, label="first", interval=0.02),
        Heartbeat(second, label="second", interval=0.03),
    ):
        wait_until(lambda: first.count >= 3 and second.count >= 3, "beats of both")
    ended_at = first.count

    later = Beats()
    with Heartbeat(later, label="later", interval=0.02):
        wait_until(lambda: later.count >= 3, "beats after the first ended")

    assert first.count == ended_at
    assert len(first.threads | second.threads | later.threads) == 1  # one shared thread


def test_a_failing_beat_does_not_stop_the_others():
    def broken() -> None:
        raise RuntimeError("a bug in one refresh")

    healthy = Beats()
    with (
        Heartbeat(broken, label="broken", interval=0.02),
        Heartbeat(healthy, label="ok", interval=0.02),
    ):
        wait_until(lambda: healthy.count >= 5, "beats beside a failing one")


def test_slow_periodic_work_in_a_thread_of_its_own_does_not_hold_back_the_leases():
    """A notification tick waiting on a mail server beats in its own thread: the leases'
    heartbeats go on meanwhile."""
    slow_started, release = threading.Event(), threading.Event()

    def waits_on_a_mail_server() -> None:
        slow_started.set()
        release.wait(DEADLINE)

    lease = Beats()
    with Heartbeat(waits_on_a_mail_server, label="mail", interval=0.01, thread="slow-test"):
        assert slow_started.wait(DEADLINE)
        with Heartbeat(lease, label="lease", interval=0.02):
            wait_until(lambda: lease.count >= 3, "lease beats while the mail server waits")
        release.set()
    assert "slow-test" not in lease.threads
