"""Parquet exports stream: a row group is written and handed out before the next rows are
read, so an export never holds more than one row group; the file reads back whole, typed."""

import io
from decimal import Decimal

import pyarrow.parquet as pq

from benchmark.engine.parquet_export import Column, parquet_chunks

COLUMNS = (Column("id", "int"), Column("text"), Column("cost", "float"), Column("trace", "json"))


def test_each_row_group_leaves_before_the_next_rows_are_read():
    consumed = []

    def rows():
        for i in range(25):
            consumed.append(i)
            yield {"id": i, "text": f"row {i}", "cost": Decimal("0.25"), "trace": [{"turn": i}]}

    chunks = parquet_chunks(rows(), COLUMNS, row_group=10)
    first = next(chunks)
    assert first.startswith(b"PAR1") and len(consumed) == 10  # the first group only
    data = first + b"".join(chunks)
    table = pq.read_table(io.BytesIO(data))
    assert pq.ParquetFile(io.BytesIO(data)).num_row_groups == 3
    assert table.column("id").to_pylist() == list(range(25))
    assert table.column("cost").to_pylist()[0] == 0.25
    assert table.column("trace").to_pylist()[3] == '[{"turn": 3}]'


def test_an_empty_export_still_has_its_typed_columns():
    table = pq.read_table(io.BytesIO(b"".join(parquet_chunks([], COLUMNS))))
    assert table.num_rows == 0
    assert [str(t) for t in table.schema.types] == ["int64", "string", "double", "string"]
