"""INSERT new rows from SQL built once per model and row count, for the writes a busy loop
repeats: every agent or patient call's accounting row, every conversation's trace.

`Model.save()` and `bulk_create` compile the ORM's INSERT again on every call, which cost
more CPU than the database spent running it (issue 34). These write the same columns with
the same values (each field's `pre_save` and `get_db_prep_save`, so defaults, auto_now_add
and JSON behave as with the ORM) but read no ids back: use them only for rows nothing reads
again from the instance. No signals are sent, as with bulk_create.

On PostgreSQL several rows go in one COPY: an INSERT of a whole trace has hundreds of
parameters, which psycopg parses out of the statement again every time (it caches statements
of at most 50) and quotes one by one into SQL text the server then parses; COPY sends the same
values as rows of data, through the same adapters.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import nullcontext

from django.db import connections, router
from django.db.models import Model


def rows_insert(rows: Sequence[Model]) -> None:
    """INSERT `rows` (new instances of one model) in as few statements as the database's
    parameter limit allows."""
    if not rows:
        return
    model = type(rows[0])
    if model._meta.parents:  # a row over more than one table: the ORM knows how
        model.objects.bulk_create(rows)
        return
    connection = connections[router.db_for_write(model)]
    fields = _insert_fields(model)
    if connection.vendor == "postgresql" and len(rows) > 1:
        _rows_copy(connection, model, fields, rows)
        return
    batch = max(connection.ops.bulk_batch_size(fields, rows), 1)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            values = [value for row in chunk for value in _row_values(row, fields, connection)]
            cursor.execute(_insert_sql(model, connection.alias, len(chunk)), values)


def _rows_copy(connection, model: type[Model], fields: tuple, rows: Sequence[Model]) -> None:
    sql = _copy_sql(model, connection.alias)
    with connection.cursor() as cursor:
        # A COPY is a statement like any other in the query log (the query-count tests).
        logged = cursor.debug_sql(sql) if hasattr(cursor, "debug_sql") else nullcontext()
        with logged, cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(_row_values(row, fields, connection))


def _row_values(row: Model, fields: tuple, connection) -> list:
    """The row's values as the ORM's INSERT sends them."""
    return [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]


@functools.cache
def _insert_fields(model: type[Model]) -> tuple:
    return tuple(field for field in model._meta.concrete_fields if not field.primary_key)


@functools.lru_cache(maxsize=256)
def _insert_sql(model: type[Model], alias: str, count: int) -> str:
    quote = connections[alias].ops.quote_name
    fields = _insert_fields(model)
    columns = ", ".join(quote(field.column) for field in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    return (
        f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES {', '.join([row] * count)}"
    )


@functools.lru_cache(maxsize=64)
def _copy_sql(model: type[Model], alias: str) -> str:
    quote = connections[alias].ops.quote_name
    columns = ", ".join(quote(field.column) for field in _insert_fields(model))
    return f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"
