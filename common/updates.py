"""UPDATE many rows of one model, each to its own values, in one statement per few hundred
rows: an UPDATE joined to a VALUES list (SQLite 3.33+ and PostgreSQL both name its columns
column1, column2, ...).

Django's `bulk_update` builds a CASE expression per row and field and resolves each one, which
made it most of the CPU a batch job spent recording its answers (a chunk of 200 judge scores
sets 18 fields: 3,600 expressions, issue 34). These write the same values the same way (each
field's `get_db_prep_save`, as bulk_update's `Value`s do; like it, no `pre_save`, so auto_now
fields are set by the caller) and send no signals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model

# Rows a statement at most, whatever the parameter limit allows.
ROWS_PER_STATEMENT = 300


def rows_update(rows: Sequence[Model], fields: Iterable[str]) -> None:
    """Store `fields` of `rows` (saved instances of one model) as they are on the instances:
    plain values only (unlike bulk_update, no F() or other expressions)."""
    if not rows:
        return
    model = type(rows[0])
    concrete = [model._meta.get_field(name) for name in fields]
    values_update(
        model, concrete, ((row.pk, *(getattr(row, f.attname) for f in concrete)) for row in rows)
    )


def values_update(
    model: type[Model], fields: Sequence[Field], rows: Iterable[Sequence[Any]]
) -> None:
    """Store, in each row of `model` named by a tuple's first value (its primary key), the
    tuple's other values in `fields`, in order."""
    connection = connections[router.db_for_write(model)]
    rows = list(rows)
    if not rows or not fields:
        return
    quote = connection.ops.quote_name
    table, key = quote(model._meta.db_table), quote(model._meta.pk.column)
    assignments = ", ".join(
        f"{quote(field.column)} = {_typed(field, f'v.column{n}', connection)}"
        for n, field in enumerate(fields, start=2)
    )
    limit = connection.features.max_query_params or 65_535
    per_statement = max(1, min(ROWS_PER_STATEMENT, limit // (1 + len(fields))))
    row_sql = "(" + ", ".join(["%s"] * (1 + len(fields))) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            params = [
                value
                for pk, *values in chunk
                for value in (pk, *_prepared(fields, values, connection))
            ]
            listed = ", ".join([row_sql] * len(chunk))
            cursor.execute(
                f"UPDATE {table} SET {assignments} FROM (VALUES {listed}) AS v "
                f"WHERE {table}.{key} = v.column1",
                params,
            )


def _prepared(fields: Sequence[Field], values: Sequence[Any], connection) -> list:
    return [
        field.get_db_prep_save(value, connection)
        for field, value in zip(fields, values, strict=True)
    ]


def _typed(field: Field, column: str, connection) -> str:
    """The VALUES column as the field's type. PostgreSQL types a VALUES column from its values,
    and a string parameter has no type of its own (it reads as text), so each is cast; SQLite
    stores what it is given."""
    if connection.vendor != "postgresql":
        return column
    return f"CAST({column} AS {field.cast_db_type(connection)})"
