"""Parquet files written one row group at a time and handed out as they are written, so an
export of 144,000 judge scores holds one row group in memory, never the whole table. The
writer's output goes to a sink that keeps only the bytes not yet sent; each row group's bytes
leave as soon as it is written, and the footer (the file's index of its row groups) last.

Columns are declared (`Column`): an empty export still has its columns and types, and every
file of a kind reads back with the same schema. Nested values (a trace, a profile, event
links) are JSON text, readable by any Parquet reader. Pure: no Django.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP = 10_000
CONTENT_TYPE = "application/vnd.apache.parquet"
TYPES = {
    "string": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "json": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


@dataclass(frozen=True)
class Column:
    name: str
    kind: str = "string"  # a key of TYPES


def schema_of(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([pa.field(column.name, TYPES[column.kind]) for column in columns])


def parquet_chunks(
    rows: Iterable[Mapping],
    columns: Sequence[Column],
    *,
    row_group: int = ROW_GROUP,
    metadata: Mapping[str, str] | None = None,
) -> Iterator[bytes]:
    """The Parquet file of `rows` (mappings with the columns' names) as a stream of bytes;
    `metadata` goes into the file's key-value metadata."""
    schema = schema_of(columns)
    if metadata:
        schema = schema.with_metadata(dict(metadata))
    sink = _Sink()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    rows = iter(rows)
    while batch := list(itertools.islice(rows, row_group)):
        cells = {c.name: [_cell(row.get(c.name), c.kind) for row in batch] for c in columns}
        writer.write_table(pa.Table.from_pydict(cells, schema=schema))
        yield sink.take()
    writer.close()
    yield sink.take()


def _cell(value, kind: str):
    if value is None:
        return None
    if kind == "json":
        return json.dumps(value, ensure_ascii=False, default=str)
    if kind == "float" and isinstance(value, Decimal):
        return float(value)
    if kind == "string" and not isinstance(value, str):
        return str(value)
    return value


class _Sink(io.RawIOBase):
    """A write-only file that keeps what was written until `take` hands it out."""

    def __init__(self):
        super().__init__()
        self._pending = bytearray()
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._pending += data
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        data, self._pending = bytes(self._pending), bytearray()
        return data
