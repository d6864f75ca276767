"""A worker thread keeps its database connection from task to task, and replaces one that
broke (a database restart) before the next task uses it.

What a worker does around every task is played here: the signals Celery sends (the project's
handler, config.celery.connections_checked) and Celery's Django fixup (which a worker installs
and which, left to itself, closes every connection around every task). The restart itself,
with a real PostgreSQL server and a real worker, is rehearsed by
tests/workers/test_outages_postgres.py."""

import pytest
from celery import signals
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection, connections

from config.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def a_task_runs(work) -> None:
    """One task of a worker thread, with what Celery does before and after it."""
    task = app.tasks["config.ping"]
    fixup = DjangoWorkerFixup(app)
    signals.task_prerun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
    fixup.on_task_prerun(task)
    try:
        work()
    finally:
        signals.task_postrun.send(sender=task, task_id="t", task=task, args=(), kwargs={})
        fixup.on_task_postrun(task)


def a_query() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def test_a_worker_thread_keeps_its_connection_from_one_task_to_the_next():
    a_task_runs(a_query)
    first = connection.connection
    a_task_runs(a_query)
    assert first is not None and connection.connection is first


def test_a_connection_the_server_dropped_is_replaced_before_the_next_task():
    if connection.vendor != "postgresql":
        pytest.skip("a SQLite connection is an open file: no server can drop it")
    a_task_runs(a_query)
    dropped = connection.connection.info.backend_pid
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [dropped])  # as a restart does
    finally:
        other.close()

    a_task_runs(a_query)  # the health check before the first query replaces the connection

    assert connection.connection.info.backend_pid != dropped
