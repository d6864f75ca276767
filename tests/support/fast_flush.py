"""Empties the database after a transactional test by deleting only the rows tests wrote.

Django's TransactionTestCase ends each test with `flush`: it empties all ~85 tables (TRUNCATE
on PostgreSQL) and then sends post_migrate, which writes every content type and permission
back. That took 0.53 s a test on PostgreSQL and 0.12 s on SQLite on a two-vCPU machine, for
every test with a real worker, a live server or a browser. Here the tables that hold rows are
found in one query and emptied with DELETE, inside one transaction so the order of deletion
does not matter to the foreign keys (Django declares them deferrable on both databases).

Kept: the rows post_migrate would write back (content types, permissions) and the migration
history, which flush keeps too. No test changes those tables: their row counts are read once
the test database is made (`remember_kept_rows`). A teardown that finds other counts runs
Django's own flush, which writes them back, and fails naming the tables, so only the test at
fault fails. A test with `available_apps` or `serialized_rollback` gets Django's flush.
"""

from __future__ import annotations

from django.db import connections, transaction
from django.test import TransactionTestCase

KEPT_TABLES = ("django_content_type", "auth_permission", "django_migrations")


def tables_with_rows(connection) -> list[str]:
    names = connection.introspection.django_table_names(only_existing=True, include_views=False)
    quote = connection.ops.quote_name
    probes = [
        f"SELECT '{name}' WHERE EXISTS (SELECT 1 FROM {quote(name)})"
        for name in sorted(names)
        if name not in KEPT_TABLES
    ]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(probes))
        return [row[0] for row in cursor.fetchall()]


def kept_rows(connection) -> dict[str, int]:
    quote = connection.ops.quote_name
    counts = " UNION ALL ".join(
        f"SELECT '{name}', COUNT(*) FROM {quote(name)}" for name in KEPT_TABLES
    )
    with connection.cursor() as cursor:
        cursor.execute(counts)
        return dict(cursor.fetchall())


def empty_database(connection) -> None:
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for name in tables_with_rows(connection):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(name)}")


_counts_after_migrate: dict[str, dict[str, int]] = {}


def remember_kept_rows() -> None:
    for connection in connections.all():
        _counts_after_migrate[connection.alias] = kept_rows(connection)


def changed_kept_tables(connection) -> list[str]:
    counts = kept_rows(connection)
    expected = _counts_after_migrate.get(connection.alias, counts)
    return [name for name in KEPT_TABLES if counts[name] != expected[name]]


_django_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self) -> None:
    if self.available_apps is not None or self.serialized_rollback:
        return _django_teardown(self)  # what only Django's flush knows how to do
    for alias in self._databases_names(include_mirrors=False):
        connection = connections[alias]
        empty_database(connection)
        changed = changed_kept_tables(connection)
        if changed:
            # Django's flush writes the content types and permissions back, so the tests
            # after this one start as they should and only this one fails.
            _django_teardown(self)
            raise AssertionError(
                f"this test changed the rows migrations make ({', '.join(changed)}), which "
                "the fast flush keeps; Django's flush was run after it instead"
            )


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown
