"""The load script at tiny scale, on the test database's engine: two annotators autosave and
submit through gunicorn while real Celery workers play a run and score another. A correctness
check of the harness and of the site under concurrent writers, not a timing."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workers import test_database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "bench" / "load" / "harness.py"
TINY = ["--annotators", "2", "--seconds", "8", "--run-threads", "4", "--scoring-concurrency", "4",
        "--web-processes", "1", "--worker-processes", "1"]  # fmt: skip


def test_two_annotators_at_work_beside_a_run_meet_no_error_and_lose_no_autosave(tmp_path):
    out = tmp_path / "result.json"
    command = [sys.executable, str(HARNESS), "--database", test_database_url(), *TINY,
               "--out", str(out)]  # fmt: skip
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))

    assert result["errors"] == 0, result["error_reasons"]
    assert result["lost_autosaves"] == 0, result["lost_examples"]
    assert result["acknowledged_saves"] > 0
    assert result["conversations"] > 0 and result["scores"] > 0
    assert result["conversations_failed"] == result["score_errors"] == 0
