"""Conversations remember the process holding them: a stopped process's work is taken back at
once on its own host, while a live process's, or another host's, keeps its lease."""

import os
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from unittest import mock

import psutil
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from benchmark.models import ConversationStatus
from benchmark.services import runs
from benchmark.services.conversations import conversation_execute
from jobs.services.processes import (
    ProcessIdentity,
    holder_fields,
    process_gone,
    start_ticks,
    this_process,
)
from tests.support.builders import enriched_set, launched_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def stopped_process() -> ProcessIdentity:
    """The identity of a real process of this host that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        identity = ProcessIdentity(this_process().host, child.pid, _started(child.pid))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return identity


def _started(pid: int) -> datetime:
    return datetime.fromtimestamp(psutil.Process(pid).create_time(), tz=UTC)


def run_with_held_conversation(holder: ProcessIdentity, *, status=ConversationStatus.RUNNING):
    run = launched_run(enriched_set(name="held", size=2), name="held run")
    held = run.conversations.first()
    run.conversations.filter(pk=held.pk).update(
        status=status, heartbeat_at=timezone.now(), **holder_fields(holder)
    )
    return run, held


def test_a_process_that_ended_is_gone_and_a_live_one_is_not(stopped_process):
    assert process_gone(stopped_process)
    assert not process_gone(this_process())


def test_a_reused_pid_is_not_taken_for_the_holder():
    me = this_process()
    assert process_gone(ProcessIdentity(me.host, me.pid, me.started_at - timedelta(hours=1)))


@pytest.mark.skipif(start_ticks(os.getpid()) is None, reason="the system gives no start ticks")
def test_a_wall_clock_step_does_not_make_a_live_process_look_gone(monkeypatch):
    me = this_process()
    # After the clock is stepped an hour, the start time derived from it moves by an hour.
    stepped = psutil.Process.create_time
    monkeypatch.setattr(psutil.Process, "create_time", lambda self: stepped(self) + 3600)
    assert not process_gone(me)


@pytest.mark.skipif(start_ticks(os.getpid()) is None, reason="the system gives no start ticks")
def test_a_reused_pid_started_at_other_ticks_is_gone_even_within_a_second():
    me = this_process()
    assert process_gone(replace(me, start_ticks=me.start_ticks - 1))


def test_a_process_of_another_host_is_never_taken_for_gone(stopped_process):
    elsewhere = ProcessIdentity("another-host", stopped_process.pid, stopped_process.started_at)
    assert not process_gone(elsewhere)


def test_the_worker_playing_a_conversation_is_recorded_as_its_holder():
    run = launched_run(enriched_set(name="holder", size=1), name="holder run")
    conversation = run.conversations.get()
    seen = {}

    def look(*args, **kwargs):
        conversation.refresh_from_db()
        seen["holder"] = (conversation.holder_host, conversation.holder_pid)

    with mock.patch("benchmark.services.conversations._play", side_effect=look):
        conversation_execute(conversation.pk)
    me = this_process()
    assert seen["holder"] == (me.host, me.pid)


@pytest.mark.parametrize("status", [ConversationStatus.RUNNING, ConversationStatus.QUEUED])
def test_conversations_of_a_stopped_process_are_reclaimed_at_once(stopped_process, status):
    run, held = run_with_held_conversation(stopped_process, status=status)

    reclaimed = runs.run_reclaim_abandoned(run)

    assert [(r.holder.pid, r.count) for r in reclaimed] == [(stopped_process.pid, 1)]
    held.refresh_from_db()
    assert held.status == ConversationStatus.PENDING
    assert held.holder_pid is None


def test_a_dispatch_takes_back_a_stopped_process_s_conversation_and_sends_it_again(
    stopped_process,
):
    run, held = run_with_held_conversation(stopped_process)

    claimed = runs.run_dispatch(run, lambda ids: None)

    assert held.pk in claimed


def test_conversations_of_a_live_process_or_another_host_keep_their_lease():
    for holder in (this_process(), ProcessIdentity("another-host", 1, timezone.now())):
        run, held = run_with_held_conversation(holder)
        assert runs.run_reclaim_abandoned(run) == []
        runs.run_dispatch(run, lambda ids: None)
        held.refresh_from_db()
        assert held.status == ConversationStatus.RUNNING
        run.delete()


@pytest.mark.django_db(transaction=True)
def test_an_inline_command_told_not_to_wait_stops_with_an_error_naming_the_holder():
    run, held = run_with_held_conversation(ProcessIdentity("another-host", 4242, timezone.now()))
    command = [
        "run_benchmark", "--name", run.name, "--set", run.benchmark_set.name,
        "--model", "offline/careful", "--inline", "--no-wait",
    ]  # fmt: skip

    with pytest.raises(CommandError) as raised:
        call_command(*command)

    message = str(raised.value)
    assert "1 conversation is held by another process (pid 4242 on another-host) until" in message
    assert "not waiting (--no-wait)" in message
    held.refresh_from_db()
    # Another host's work keeps its lease: nothing was taken from it.
    assert held.status == ConversationStatus.RUNNING and held.holder_host == "another-host"
    # What it could play, it played.
    assert run.conversations.filter(status=ConversationStatus.FINISHED).count() == 1
