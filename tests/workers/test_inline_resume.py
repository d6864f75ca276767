"""`run_benchmark --inline` killed mid-run is resumed by running the same command again.

Real `manage.py run_benchmark --inline` processes on the test's database, with the offline
provider answering after OFFLINE_LATENCY_MS so conversations are in flight when one is
killed. The lease stays at its default (15 minutes): what the second command does at once, it
does because it knows the first process is gone, not because a lease ran out.
"""

import signal

import pytest

from benchmark.models import ConversationStatus
from tests.support.builders import enriched_set
from tests.support.workers import start_python, test_database_url, wait_for, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
# Forked as the tests' workers are (tests/support/worker_forks.py): the command loads the
# project from scratch, without paying again for the libraries' imports.
COMMAND = [
    "manage.py", "run_benchmark", "--name", "inline resume",
    "--set", "inline set", "--model", "offline/careful", "--model", "offline/careless",
    "--concurrency", "2", "--no-cache", "--inline",
]  # fmt: skip
CONVERSATIONS = 6  # 3 cases x 2 models


@pytest.fixture
def environment(tmp_path):
    enriched_set(name="inline set", size=3, sampler_seed=5)
    return worker_env(tmp_path, DATABASE_URL=test_database_url(), OFFLINE_LATENCY_MS="150")


def start(environment, log_file):
    return start_python(COMMAND, environment, log_file)


def conversations():
    from benchmark.models import Conversation

    return Conversation.objects.filter(run__name="inline resume")


def wait_until_one_runs() -> None:
    wait_for(
        lambda: conversations().filter(status=ConversationStatus.RUNNING).exists(),
        timeout=120,
        what="a conversation to start",
    )


def test_a_killed_inline_run_is_reclaimed_and_finished_by_the_same_command(environment, tmp_path):
    first = start(environment, tmp_path / "first.log")
    try:
        wait_until_one_runs()
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    left = conversations().filter(status__in=("queued", "running")).count()
    assert left > 0

    again = start(environment, tmp_path / "again.log")
    again.wait(timeout=300)
    said = (tmp_path / "again.log").read_text()

    assert again.returncode == 0, said
    noun = "conversation" if left == 1 else "conversations"
    assert f"Reclaimed {left} {noun} left by a stopped process (pid {first.pid})." in said
    assert f"{CONVERSATIONS} finished, 0 failed, 0 cancelled, 0 running" in said
    assert conversations().filter(status=ConversationStatus.FINISHED).count() == CONVERSATIONS


def test_a_second_inline_command_waits_for_what_a_live_one_holds(environment, tmp_path):
    # The first command is paused (SIGSTOP) once it holds a conversation and resumed only when
    # the second says it is waiting: on a busy machine the second's start-up alone can outlast
    # the whole first run, and there would be nothing left to wait for.
    second_log = tmp_path / "second.log"
    first, waiting = start(environment, tmp_path / "first.log"), None
    try:
        wait_until_one_runs()
        first.send_signal(signal.SIGSTOP)
        waiting = start({**environment, "PYTHONUNBUFFERED": "1"}, second_log)
        wait_for(lambda: "waiting - Ctrl-C to stop." in second_log.read_text(),
                 timeout=120, what="the second command to wait")  # fmt: skip
        first.send_signal(signal.SIGCONT)
        waiting.wait(timeout=300)
        first.wait(timeout=300)
    finally:
        for process in (first, waiting):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
    said = second_log.read_text()

    assert waiting.returncode == 0, said
    assert "held by another process" in said
    assert f"(pid {first.pid} on this host) until" in said
    assert f"{CONVERSATIONS} finished" in said
    assert first.returncode == 0
    # Waited for, never taken: no conversation was played twice.
    assert sorted(conversations().values_list("attempts", flat=True)) == [1] * CONVERSATIONS
