"""The forker behind the tests' real workers (tests/support/worker_forks.py) hands each process
the test's environment, arguments and log, and nothing of the project: that loads in the fork."""

import signal

import pytest

from tests.support import worker_forks

SCRIPT = """
import os, sys
print("mark", os.environ.get("FORK_MARK"), "argv", sys.argv[1:])
print("project loaded before the script:", "config" in sys.modules or "django.conf" in sys.modules
      and __import__("django.conf").conf.settings.configured)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def forker(monkeypatch):
    monkeypatch.delenv("TEST_WORKER_FORKS", raising=False)
    return worker_forks.forker()


def test_a_fork_runs_the_script_with_the_tests_environment_and_exit_code(forker, tmp_path):
    script, log = tmp_path / "script.py", tmp_path / "out.log"
    script.write_text(SCRIPT, encoding="utf-8")
    process = forker.start([str(script), "3", "more"], {"FORK_MARK": "seen"}, log)

    assert process.wait(timeout=60) == 3
    said = log.read_text()
    assert "mark seen argv ['3', 'more']" in said
    assert "project loaded before the script: False" in said


def test_a_killed_fork_reports_the_signal_as_popen_does(forker, tmp_path):
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(120)\n", encoding="utf-8")
    process = forker.start([str(script)], {}, tmp_path / "out.log")

    assert process.poll() is None
    process.kill()
    assert process.wait(timeout=30) == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL
