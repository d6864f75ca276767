"""PostgreSQL restarted mid-run: the workers reconnect and nothing is lost or stored twice.

The test owns a PostgreSQL server (tests/support/postgres.py), so it would run the same on
either leg of CI; it runs on the PostgreSQL leg, the one about PostgreSQL (and the shorter: a
minute here kept the SQLite leg over its 20 minutes). Everything else talks to that server as
in production: `manage.py migrate`, then the set, the run and the scoring job made by the management
commands in subprocesses, played by a real worker on the embedded queue. The server is
restarted (`pg_ctl restart -m fast`: every connection dropped) while conversations and judge
calls are in flight; the test reads the outcome straight from the server with psycopg.
"""

import re
import subprocess
import sys

import pytest

from tests.support.postgres import PrivatePostgres
from tests.support.workers import ROOT, start_worker, stop_worker, wait_for, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.leg("postgres")]
LEASE_SECONDS = 5
CONVERSATIONS = 8  # 2 cases x 2 repetitions x 2 models
BUILD = """
from django.core.management import call_command
call_command("generate_set", name="restart set", size=2, seed=5, inline=True)
call_command(
    "run_benchmark", "--name", "restart run", "--set", "restart set",
    "--model", "offline/careful", "--model", "offline/careless",
    "--repetitions", "2", "--concurrency", "1", "--no-cache", "--no-wait",
)
"""
# Started early and held at the readline, so that the scoring job is made the moment the test
# says (a shell started then would take seconds to import Django on a busy machine, and the
# run could finish meanwhile).
SCORE = """
import sys
from django.core.management import call_command
from benchmark.models import Run
from jury.services.juries import jury_demo_ensure
sys.stdin.readline()
jury = jury_demo_ensure()
call_command("score_run", Run.objects.get().pk, jury=jury.name, no_cache=True, concurrency=8)
"""


@pytest.fixture
def postgres():
    server = PrivatePostgres().start()
    yield server
    server.stop()


def manage(environment: dict, *arguments: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=environment,
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, f"manage.py {arguments[0]} failed:\n{done.stderr[-3000:]}"


def manage_when_told(environment: dict, *arguments: str) -> subprocess.Popen:
    """A manage.py command started now that does its work once `tell` writes a line to it."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *arguments], cwd=ROOT, env=environment, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def tell(process: subprocess.Popen) -> None:
    stdout, stderr = process.communicate("go\n", timeout=180)
    assert process.returncode == 0, f"the held command failed:\n{stderr[-3000:]}"


def counts(server: PrivatePostgres, sql: str) -> dict:
    with server.connect() as connection:
        return dict(connection.execute(sql).fetchall())


def conversation_counts(server) -> dict:
    return counts(server, "SELECT status, count(*) FROM benchmark_conversation GROUP BY status")


def score_counts(server) -> dict:
    return counts(server, "SELECT status, count(*) FROM jury_judgescore GROUP BY status")


def worker_connections(server: PrivatePostgres) -> set[int]:
    """Server process ids of every client connection but the test's own: the worker's."""
    with server.connect() as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
            " AND pid <> pg_backend_pid()"
        ).fetchall()
    return {row[0] for row in rows}


def terminated_backends(server: PrivatePostgres) -> set[int]:
    """Process ids the server's log says it cut at a shutdown (each logs a FATAL line)."""
    cut = re.findall(r"\[(\d+)\] FATAL:  terminating connection due to administrator command",
                     server.log.read_text())  # fmt: skip
    return {int(pid) for pid in cut}


def statuses(server, table: str) -> set:
    with server.connect() as connection:
        return {row[0] for row in connection.execute(f"SELECT status FROM {table}")}


def test_a_postgres_restart_mid_run_loses_and_repeats_nothing(tmp_path, postgres):
    environment = worker_env(
        tmp_path,
        DATABASE_URL=postgres.url,
        CONVERSATION_LEASE_SECONDS=str(LEASE_SECONDS),
        OFFLINE_LATENCY_MS="200",
    )
    manage(environment, "migrate", "--no-input")
    manage(environment, "shell", "-c", BUILD)
    scorer = manage_when_told(environment, "shell", "-c", SCORE)
    worker = start_worker(environment, concurrency=4)
    try:
        wait_for(
            lambda: conversation_counts(postgres).get("finished", 0) >= 2,
            timeout=60,
            what="the first conversations",
        )
        tell(scorer)
        wait_for(
            lambda: (
                score_counts(postgres).get("valid", 0) > 0
                and conversation_counts(postgres).get("running", 0) > 0
            ),
            timeout=60,
            what="conversations and judge calls in flight",
        )
        scores_before = score_counts(postgres)
        assert scores_before.get("pending", 0) > 0
        worker_backends = worker_connections(postgres)
        assert worker_backends, "the worker holds no database connection to cut"
        postgres.restart()
        wait_for(
            lambda: (
                statuses(postgres, "benchmark_run") == {"finished"}
                and statuses(postgres, "jury_scoringjob") == {"finished"}
            ),
            timeout=90,
            what="the run and the scoring job to finish after the restart",
        )
    finally:
        scorer.kill()
        stop_worker(worker)
    # The restart cut the connections the worker was using while work was in flight. Whether
    # a worker thread then sees an error depends on timing: the server is back in a fraction
    # of a second, and a thread waiting on its 200 ms model call finds the connection gone
    # and replaces it silently (connection_checked, the per-task health check).
    cut = terminated_backends(postgres)
    assert worker_backends & cut, f"worker connections {worker_backends}, cut {cut}"
    assert conversation_counts(postgres) == {"finished": CONVERSATIONS}
    with postgres.connect() as connection:
        duplicated_events = connection.execute(
            "SELECT count(*) FROM (SELECT conversation_id, event_id FROM benchmark_traceevent"
            " GROUP BY conversation_id, event_id HAVING count(*) > 1) AS twice"
        ).fetchone()[0]
        empty = connection.execute(
            "SELECT count(*) FROM benchmark_conversation c WHERE NOT EXISTS"
            " (SELECT 1 FROM benchmark_traceevent e WHERE e.conversation_id = c.id)"
        ).fetchone()[0]
        answers = connection.execute(
            "SELECT jsonb_array_length(attempts::jsonb), count(*) FROM jury_judgescore GROUP BY 1"
        ).fetchall()
        merged = connection.execute(
            "SELECT count(*) FROM jury_conversationresult WHERE complete"
        ).fetchone()[0]
        scored = connection.execute(
            "SELECT count(DISTINCT conversation_id) FROM jury_judgescore"
        ).fetchone()[0]
    assert duplicated_events == 0 and empty == 0
    # Every judge call answered and stored once; none marked failed by the lost connection.
    assert score_counts(postgres) == {"valid": sum(scores_before.values())}
    assert dict(answers) == {1: sum(scores_before.values())}
    assert merged == scored
